// Flags and helpers shared by the clickctl commands that talk to a server
// (predict, update, models, replay --server): the target, the model, the
// deadline, and the check that rejects flags a command would ignore.
#ifndef CLICKD_CLIENT_CLICKCTL_NETWORK_FLAGS_H_
#define CLICKD_CLIENT_CLICKCTL_NETWORK_FLAGS_H_

#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/clickd_client.h"

namespace clickd {

// The names of the flags defined in clickctl source files whose name ends
// with `file_suffix` (e.g. "model_flags.cc").
std::set<std::string> FlagsDefinedIn(const std::string& file_suffix);

// The network flags every network command takes: server, model,
// deadline_ms, json.
std::set<std::string> NetworkFlagNames();

// InvalidArgument naming the first clickctl flag that is set to a value
// other than its default and is not in `used`, e.g. "--passes does not apply
// to clickctl replay --server". A flag set to its default changes nothing,
// so it passes.
absl::Status CheckFlagsApply(const std::string& command, const std::set<std::string>& used);

// --deadline_ms, or `fallback` when unset. InvalidArgument unless positive.
absl::StatusOr<absl::Duration> DeadlineFromFlags(absl::Duration fallback);

// A client of --server with the given per-call deadline.
absl::StatusOr<std::unique_ptr<ClickdClient>> ClientFromFlags(absl::Duration deadline);

// Fills an empty model name in a JSON request from --model. InvalidArgument
// if --model was set to a name other than the one the JSON gives.
absl::Status ResolveModel(const std::string& what, std::string* model);

// The value of --model (a name), --json and --server.
std::string ModelFlag();
bool JsonFlag();
std::string ServerFlag();

// Reports a failed call: "clickctl COMMAND: CODE: message" on stderr and,
// with --json, {"error":"message","code":"CODE"} as the last stdout line.
// Returns exit code 1.
int ReportError(const std::string& command, const absl::Status& status);

// Reports a usage error found before anything was sent, on stderr only.
// Returns exit code 2.
int UsageError(const std::string& command, const absl::Status& status);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_NETWORK_FLAGS_H_
