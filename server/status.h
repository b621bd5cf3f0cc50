// The one place where absl::Status becomes the grpc::Status a caller sees.
// The canonical codes are the same numbers in both, so the code is a cast;
// the message is made fit for a caller first (CallerMessage).
#ifndef CLICKD_SERVER_STATUS_H_
#define CLICKD_SERVER_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace clickd {

// Longest message a caller gets. gRPC sends the message in a trailer, and a
// trailer over the peer's metadata limit (8 KiB by default) fails the whole
// call with a confusing error instead of the real one.
inline constexpr size_t kMaxCallerMessageBytes = 1024;

// The message as a caller may see it: every occurrence of `private_prefix`
// (the server's --data_dir, which callers have no business knowing)
// replaced by "<data_dir>", and cut to kMaxCallerMessageBytes. The server
// logs the full message itself where it matters (see ClickdService).
std::string CallerMessage(absl::string_view message, absl::string_view private_prefix);

grpc::Status ToGrpcStatus(const absl::Status& status, absl::string_view private_prefix = {});

}  // namespace clickd

#endif  // CLICKD_SERVER_STATUS_H_
