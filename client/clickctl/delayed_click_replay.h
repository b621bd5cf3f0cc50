// `clickctl replay --server --delayed_clicks`: replays a click log through
// the impression-to-click loop (ModelConfig.feedback) of a served model, the
// way production traffic reaches it. Each usable example is scored by a
// Predict with log_impressions (the example as the one candidate, the
// context empty); a clicked example's label follows as a Feedback after a
// delay drawn from an exponential of mean --click_delay_mean_seconds
// simulated seconds, run --time_scale times faster than real time. A
// non-click gets no Feedback: the server's TTL decides what it becomes
// (under wait_negative, a negative). Pending clicks wait in a queue ordered
// by due time, at most --max_pending_clicks of them: a full queue holds the
// replay until its earliest click is due. Prints a summary: impressions
// logged, clicks sent, their statuses, and the model's progressive metrics
// at the end. docs/clickctl.md.
#ifndef CLICKD_CLIENT_CLICKCTL_DELAYED_CLICK_REPLAY_H_
#define CLICKD_CLIENT_CLICKCTL_DELAYED_CLICK_REPLAY_H_

#include <chrono>
#include <cstdint>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clickd/v1/clickd.pb.h"
#include "client/clickctl/server_replay.h"
#include "client/clickd_client.h"

namespace clickd {

// The clicks not yet sent, ordered by due time (ties: the order they were
// added in). Externally synchronized.
class PendingClicks {
 public:
  using Time = std::chrono::steady_clock::time_point;

  void Add(v1::FeedbackItem item, Time due);
  size_t size() const { return queue_.size(); }
  bool empty() const { return queue_.empty(); }
  // The earliest due time; only when not empty.
  Time EarliestDue() const { return queue_.top().due; }
  // Removes and returns, earliest first, up to `max_items` clicks due at `now`.
  std::vector<v1::FeedbackItem> TakeDue(Time now, size_t max_items);

 private:
  struct Pending {
    Time due;
    uint64_t order;
    v1::FeedbackItem item;
    // std::priority_queue puts the greatest on top: the latest is "less".
    bool operator<(const Pending& other) const {
      return due != other.due ? due > other.due : order > other.order;
    }
  };
  std::priority_queue<Pending> queue_;
  uint64_t added_ = 0;
};

// A click's simulated delay in seconds: -mean * ln(1 - u), `u` uniform in
// [0, 1) from the top 53 bits of `random` (so that a seed gives the same
// delays on every platform).
double ExponentialDelaySeconds(double mean, uint64_t random);

struct DelayedClickOptions {
  double click_delay_mean_seconds = 60;
  double time_scale = 1;  // simulated seconds per real second
  size_t max_pending_clicks = 100000;
  size_t batch_size = 100;  // most items per Feedback request
  uint64_t seed = 1;
  ExampleRange range;
  absl::Duration deadline = absl::Seconds(600);  // of the whole replay
  bool skip_bad_lines = false;
};

// The flags --delayed_clicks reads besides replay --server's.
std::set<std::string> DelayedClickFlagNames();

// The options from the flags; InvalidArgument naming a flag out of range.
absl::StatusOr<DelayedClickOptions> DelayedClickOptionsFromFlags();

// Replays `reader` into `model` (which must have the loop); returns the
// process exit code: 0, or 1 after a failed call, an unusable line or the
// deadline, with what was done so far.
int RunDelayedClickReplay(const ClickdClient& client, ExampleReader& reader,
                          const std::string& path, const v1::ModelInfo& model,
                          const DelayedClickOptions& options);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_DELAYED_CLICK_REPLAY_H_
