// `clickctl replay`: trains a model on a log file and reports progressive
// (and optional test) metrics. See docs/clickctl.md.
#ifndef CLICKD_CLIENT_CLICKCTL_REPLAY_COMMAND_H_
#define CLICKD_CLIENT_CLICKCTL_REPLAY_COMMAND_H_

#include <string>
#include <vector>

namespace clickd {

// Runs the command with its positional arguments (the input file); returns
// the process exit code.
int RunReplayCommand(const std::vector<std::string>& args);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_REPLAY_COMMAND_H_
