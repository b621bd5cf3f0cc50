// The process's gRPC servers: one per address flag (--address, and
// --admin_address and --health_address when set), started with the
// security and limits of ServerSettings and stopped within a grace period.
#ifndef CLICKD_SERVER_GRPC_SERVERS_H_
#define CLICKD_SERVER_GRPC_SERVERS_H_

#include <grpcpp/server.h>

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/executor.h"
#include "server/limits.h"
#include "server/server_settings.h"

namespace clickd {

// The started servers: the one of --address first, then admin and health
// when their addresses are set.
struct Servers {
  std::vector<std::unique_ptr<grpc::Server>> all;
  int port = 0;  // of --address
};

// What each address serves; the services must outlive the servers.
struct ServedServices {
  grpc::Service* main;
  grpc::Service* admin;
  grpc::Service* health;  // refuses every clickd method
};

// Starts a server per address, warning on stderr about plaintext on a
// non-loopback address; Unavailable naming the address if one cannot
// listen. The servers share one thread quota (--threads).
absl::StatusOr<Servers> StartServers(const Addresses& addresses, const Security& security,
                                     const Limits& limits, const ServedServices& services);

// Stops the servers within `grace`: gRPC stops accepting calls and the
// executor finishes those in flight; at the deadline gRPC cancels the
// calls still open and the executor cancels the queued ones (UNAVAILABLE).
// Returns false if calls still run shortly after the deadline (a worker
// stuck in a long learn): the caller then exits without waiting for them.
bool DrainAndStop(const std::vector<std::unique_ptr<grpc::Server>>& servers, Executor* executor,
                  std::chrono::seconds grace);

}  // namespace clickd

#endif  // CLICKD_SERVER_GRPC_SERVERS_H_
