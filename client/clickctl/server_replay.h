// `clickctl replay --server`: reads a log file exactly as `replay --offline`
// does (core's ExampleReader, the same label checks and skip rules) and
// streams it to a served model over UpdateStreamAcked, each batch
// acknowledged before the next, then reports the progressive metrics of the
// pre-update margins the server returned. On a fresh model with the same
// config they equal the offline replay's. If the stream breaks (the server
// died, say), it reports how many examples the server acknowledged.
// With --delayed_clicks it replays the log through Predict and Feedback
// instead (delayed_click_replay.h). docs/clickctl.md.
#ifndef CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_
#define CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/features/example.h"
#include "core/formats/example_reader.h"
#include "core/optim/loss.h"

namespace clickd {

// Runs the command with its positional arguments (the input file); returns
// the process exit code.
int RunServerReplayCommand(const std::vector<std::string>& args);

// Which usable examples of the file to replay.
struct ExampleRange {
  uint64_t skip = 0;   // the first `skip` are not sent
  uint64_t limit = 0;  // then at most `limit` (0: all the rest)
};

// The usable examples of a log in a range, as every server replay reads
// them: a line whose label the model's loss refuses stops the replay, or
// with skip_bad_lines is skipped, its reason kept (at most
// ExampleReader::kMaxKeptErrors reasons, the reader's own included).
// Externally synchronized.
class UsableExamples {
 public:
  UsableExamples(ExampleReader& reader, std::string path, LossType loss, ExampleRange range,
                 bool skip_bad_lines)
      : reader_(reader),
        path_(std::move(path)),
        loss_(loss),
        range_(range),
        skip_bad_lines_(skip_bad_lines) {}

  // The next usable example in the range: true; false at the range's or the
  // file's end; the error of an unusable line. Bounded by the file's length.
  absl::StatusOr<bool> Next(LabeledExample* example);

  // Every skipped line, the reader's and this one's, and their reasons.
  uint64_t skipped_lines() const { return skipped_lines_ + reader_.skipped_lines(); }
  std::vector<std::string> skipped_errors() const;

 private:
  ExampleReader& reader_;
  const std::string path_;
  const LossType loss_;
  const ExampleRange range_;
  const bool skip_bad_lines_;
  uint64_t usable_ = 0;
  uint64_t skipped_lines_ = 0;
  std::vector<std::string> skipped_errors_;
};

// The wire form of a parsed example; unset value and importance mean 1.
void ToProto(const LabeledExample& example, v1::LabeledExample* out);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_
