// `clickctl replay --server`: reads a log file exactly as `replay --offline`
// does (core's ExampleReader, the same label checks and skip rules) and
// streams it to a served model over UpdateStreamAcked, each batch
// acknowledged before the next, then reports the progressive metrics of the
// pre-update margins the server returned. On a fresh model with the same
// config they equal the offline replay's. If the stream breaks (the server
// died, say), it reports how many examples the server acknowledged.
// docs/clickctl.md.
#ifndef CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_
#define CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "clickd/v1/clickd.pb.h"
#include "core/features/example.h"

namespace clickd {

// Runs the command with its positional arguments (the input file); returns
// the process exit code.
int RunServerReplayCommand(const std::vector<std::string>& args);

// The wire form of a parsed example; unset value and importance mean 1.
void ToProto(const LabeledExample& example, v1::LabeledExample* out);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_SERVER_REPLAY_H_
