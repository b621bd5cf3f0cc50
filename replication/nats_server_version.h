// The nats-server version check made at start: every NATS server clickd is
// given announces its version in the INFO line it sends first on a new
// connection (NATS client protocol), and a replica refuses to start against
// one older than --nats_min_server_version. Older servers let their copies
// of a stream diverge under sequences of faults (docs/replication.md).
//
// Thread safety: free functions; each call opens its own sockets.
#ifndef CLICKD_REPLICATION_NATS_SERVER_VERSION_H_
#define CLICKD_REPLICATION_NATS_SERVER_VERSION_H_

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

// "2.15.3" (a leading "v" and a "-suffix" allowed) as {2, 15, 3}.
std::optional<std::array<int, 3>> ParseServerVersion(const std::string& version_in);

// The version a NATS server at `url` ("nats://[user:pass@]host[:port]",
// "tls://...", or "host:port") announces, waiting at most `timeout`.
// Unavailable if it cannot be reached.
absl::StatusOr<std::string> ReadServerVersion(const std::string& url,
                                              std::chrono::milliseconds timeout);

// Checks every server in the comma-separated `urls` that answers: one older
// than `minimum` is FailedPrecondition naming it, its version and the
// flag. Servers that do not answer now are skipped (the connection retries
// them later and cannot be checked then). An empty `minimum` checks nothing.
absl::Status CheckServerVersions(const std::string& urls, const std::string& minimum);

}  // namespace clickd

#endif  // CLICKD_REPLICATION_NATS_SERVER_VERSION_H_
