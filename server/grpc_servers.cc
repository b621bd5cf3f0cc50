#include "server/grpc_servers.h"

#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/auth/header_auth.h"
#include "server/auth/tls.h"

namespace clickd {
namespace {

// Warns about a gRPC address that other hosts can reach without TLS.
void WarnIfExposed(const std::string& flag, const std::string& address, const Security& security) {
  if (security.tls || auth::IsLoopbackAddress(address)) return;
  std::cerr << "clickd: WARNING: " << flag << "=" << address
            << " listens on a non-loopback address WITHOUT TLS"
            << (security.auth != nullptr ? ": bearer tokens travel in cleartext" : "")
            << "; set --tls_cert_file and --tls_key_file (docs/security.md)" << std::endl;
}

// Drops the server reflection plugin from a builder. Linking
// grpc++_reflection registers the plugin for every builder (a static
// initializer), so turning reflection off takes this option.
class NoReflectionOption final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return plugin->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

// Builds and starts a gRPC server on `address` with `services` (and
// reflection if asked); null if it cannot listen. The servers of one
// process share `quota` (null: gRPC's default), so --threads bounds them
// all together.
std::unique_ptr<grpc::Server> StartServer(const std::string& address,
                                          std::shared_ptr<grpc::ServerCredentials> credentials,
                                          const std::vector<grpc::Service*>& services,
                                          bool reflection, const Limits& limits,
                                          const grpc::ResourceQuota* quota, int* port) {
  grpc::ServerBuilder builder;
  // Without this, gRPC sets SO_REUSEPORT and a second clickd on a busy port
  // would start and split the connections with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, std::move(credentials), port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (!reflection) builder.SetOption(std::make_unique<NoReflectionOption>());
  builder.SetMaxReceiveMessageSize(limits.max_message_bytes);
  // Connections that hold a descriptor without serving calls are closed:
  // before their HTTP/2 settings, after the handshake timeout (gRPC's
  // default is 120 s); without calls, after the idle time (default never);
  // a peer that stops answering pings, after kKeepalive + kKeepaliveTimeout.
  constexpr int kKeepaliveMs = 60'000;
  constexpr int kKeepaliveTimeoutMs = 20'000;
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             limits.handshake_timeout_seconds * 1000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             limits.max_connection_idle_seconds * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  if (quota != nullptr) builder.SetResourceQuota(*quota);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) return nullptr;
  return server;
}

}  // namespace

absl::StatusOr<Servers> StartServers(const Addresses& addresses, const Security& security,
                                     const Limits& limits, const ServedServices& services) {
  std::optional<grpc::ResourceQuota> quota;
  if (addresses.grpc_threads > 0) {
    quota.emplace("clickd");
    quota->SetMaxThreads(addresses.grpc_threads);
  }
  const grpc::ResourceQuota* shared_quota = quota.has_value() ? &*quota : nullptr;
  // With credentials required, a call is authenticated from its headers
  // before gRPC reads its message (server/auth/header_auth.h).
  std::shared_ptr<grpc::ServerCredentials> credentials = security.credentials;
  if (security.auth != nullptr) {
    auto processor = std::make_shared<auth::HeaderAuthProcessor>(security.auth.get());
    if (security.tls) {
      credentials->SetAuthMetadataProcessor(processor);
    } else {
      credentials = auth::InsecureCredentialsWithAuth(processor);
    }
  }
  auto start = [&](const std::string& address, std::shared_ptr<grpc::ServerCredentials> creds,
                   grpc::Service* service, int* port) {
    return StartServer(address, std::move(creds), {service}, addresses.reflection, limits,
                       shared_quota, port);
  };
  Servers servers;
  WarnIfExposed("--address", addresses.main, security);
  servers.all.push_back(start(addresses.main, credentials, services.main, &servers.port));
  if (servers.all.back() == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", addresses.main));
  }
  if (const std::string& admin = addresses.admin; !admin.empty()) {
    WarnIfExposed("--admin_address", admin, security);
    int port = 0;
    servers.all.push_back(start(admin, credentials, services.admin, &port));
    if (servers.all.back() == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", admin, " (--admin_address)"));
    }
    std::cout << "clickd: admin methods on " << admin << " (port " << port << ")" << std::endl;
  }
  if (const std::string& health = addresses.health; !health.empty()) {
    int port = 0;
    servers.all.push_back(start(health, grpc::InsecureServerCredentials(), services.health, &port));
    if (servers.all.back() == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", health, " (--health_address)"));
    }
    std::cout << "clickd: grpc.health.v1 only, plaintext, on " << health << " (port " << port << ")"
              << std::endl;
  }
  return servers;
}

bool DrainAndStop(const std::vector<std::unique_ptr<grpc::Server>>& servers, Executor* executor,
                  std::chrono::seconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  executor->BeginDrain();
  std::promise<void> stopped;
  std::future<void> done = stopped.get_future();
  // The thread owns the promise: it may outlive this function (see below).
  std::thread stopper([&servers, grace, stopped = std::move(stopped)]() mutable {
    const auto shutdown_deadline = std::chrono::system_clock::now() + grace;
    for (const auto& server : servers) server->Shutdown(shutdown_deadline);
    stopped.set_value();
  });
  const absl::Status closing = absl::UnavailableError("the server is shutting down");
  if (done.wait_until(deadline) != std::future_status::ready) {
    executor->Close(closing);
    // Calls gRPC cancelled finish at once; only a running learn may not.
    if (done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      stopper.detach();
      return false;
    }
  }
  stopper.join();
  for (const auto& server : servers) server->Wait();
  executor->Close(closing);
  return true;
}

}  // namespace clickd
