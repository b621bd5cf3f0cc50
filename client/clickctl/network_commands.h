// The clickctl commands that call a running server: `predict`, `update` and
// `models create|list|get|delete|snapshot`. Each takes --server, --model,
// --deadline_ms and --json (network_flags.h); docs/clickctl.md documents
// every flag. Exit codes: 0 success, 1 the call failed, 2 usage error.
#ifndef CLICKD_CLIENT_CLICKCTL_NETWORK_COMMANDS_H_
#define CLICKD_CLIENT_CLICKCTL_NETWORK_COMMANDS_H_

#include <string>
#include <vector>

namespace clickd {

// Each runs the command with its positional arguments (after the command
// name) and returns the process exit code.
int RunPredictCommand(const std::vector<std::string>& args);
int RunUpdateCommand(const std::vector<std::string>& args);
int RunModelsCommand(const std::vector<std::string>& args);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_NETWORK_COMMANDS_H_
