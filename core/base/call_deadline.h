// CallDeadline: the deadline of the call this thread is serving, for a
// learner that waits for its model's learn lock. Set by the server around
// an Update's learning (a scope); read by ModelJournal::Learn and a
// memory-only model's turn once they hold the lock, before anything
// changes: an Update whose deadline passed while it waited behind another
// learner (a long dense step) is refused whole, DEADLINE_EXCEEDED, and
// nothing of it is logged or learned. A batch already being learned is not
// stopped: it is logged whole and a restart replays it whole, so an
// Update is all or nothing (UpdateResponse.applied); its length is bounded
// by the request limits instead (--max_dense_work_per_update).
//
// Without a scope (replays, the replicated applier, tests) there is no
// deadline. Scopes nest: the innermost holds.
#ifndef CLICKD_CORE_BASE_CALL_DEADLINE_H_
#define CLICKD_CORE_BASE_CALL_DEADLINE_H_

#include <chrono>

#include "absl/status/status.h"

namespace clickd {

class CallDeadline {
 public:
  using Clock = std::chrono::system_clock;

  explicit CallDeadline(Clock::time_point deadline) : previous_(current_) { current_ = deadline; }
  ~CallDeadline() { current_ = previous_; }
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

  // DEADLINE_EXCEEDED if this thread's call deadline has passed.
  static absl::Status Check() {
    if (current_ == Clock::time_point::max() || Clock::now() <= current_) {
      return absl::OkStatus();
    }
    return absl::DeadlineExceededError(
        "the call's deadline passed while it waited for the model's other learners; nothing of "
        "it was learned or logged");
  }

 private:
  static inline thread_local Clock::time_point current_ = Clock::time_point::max();
  const Clock::time_point previous_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_CALL_DEADLINE_H_
