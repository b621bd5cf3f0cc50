// `clickctl feedback`: labels impressions that `clickctl predict
// --log_impressions` (or any Predict with log_impressions) logged, through
// the Feedback RPC. One item from flags (--impression_id, --label,
// --importance, --event_time_unix_micros), or many from --input (a file, or
// - for stdin) with one "impression_id label [importance]" per line, sent
// in requests of at most --batch_size items. Prints every item's status
// (an item that did not join is reported, not an error) and a last line
// that tallies them. Exit codes: 0 every request answered, 1 a request
// failed or a line did not parse (the requests before it stay applied),
// 2 usage error. docs/clickctl.md.
#ifndef CLICKD_CLIENT_CLICKCTL_FEEDBACK_COMMAND_H_
#define CLICKD_CLIENT_CLICKCTL_FEEDBACK_COMMAND_H_

#include <set>
#include <string>
#include <vector>

namespace clickd {

// Runs the command with its positional arguments (none); returns the exit code.
int RunFeedbackCommand(const std::vector<std::string>& args);

// The flags `clickctl feedback` reads besides the network flags.
std::set<std::string> FeedbackCommandFlagNames();

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_FEEDBACK_COMMAND_H_
