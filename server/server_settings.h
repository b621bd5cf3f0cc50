// ServerSettings: every flag of clickd read and checked once, before
// anything starts, into the values the server is built from. A typo or an
// out-of-range value is an error naming the flag and its range, and the
// server exits 2 (docs/operations.md lists the flags). The flags are
// defined in server_settings.cc; nothing else reads them, except the
// replication flags (server/replication_setup.h).
#ifndef CLICKD_SERVER_SERVER_SETTINGS_H_
#define CLICKD_SERVER_SERVER_SETTINGS_H_

#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_config.h"
#include "core/serving/registry.h"
#include "server/auth/auth_files.h"
#include "server/executor.h"
#include "server/limits.h"

namespace clickd {

// What the gRPC servers are built with: credentials and authorization.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> credentials;  // of --address and --admin_address
  bool tls = false;
  bool client_certificates = false;       // mTLS (--tls_client_ca_file)
  int tls_refresh_interval_seconds = 0;   // how often the TLS files are re-read
  std::unique_ptr<auth::AuthFiles> auth;  // null: auth is off
  int auth_reload_interval_seconds = 0;   // 0: read at start only
};

// Where clickd listens; admin and health are empty when not set.
struct Addresses {
  std::string main;      // --address
  std::string admin;     // --admin_address: the admin methods, which main then refuses
  std::string health;    // --health_address: grpc.health.v1 only, plaintext
  int grpc_threads = 0;  // --threads: bound on gRPC's threads (0: gRPC's default)
  bool reflection = false;
  std::string metrics_address;
  int metrics_port = 0;  // 0: no metrics endpoint
};

struct ServerSettings {
  Addresses addresses;
  Security security;
  Limits limits;
  ExecutorOptions isolation;
  // The data directory (empty: in memory) and its journals' options; the
  // snapshot observer and sync observer are the caller's to set.
  DurabilityOptions durability;
  uint64_t max_models = 0;
  std::chrono::milliseconds snapshot_interval{0};  // 0: on demand and at shutdown only
  bool snapshot_on_shutdown = true;
  std::chrono::seconds shutdown_grace{0};
  // --replication=jetstream: replicas learn from one NATS JetStream stream.
  bool replicated = false;
  // The models --config declares, and the embedded default model.
  std::vector<ModelConfig> configured_models;
  // The embedded default model is in configured_models without --config
  // declaring it (--default_model): left out when there is no room for it.
  bool implicit_default_model = false;
};

// Reads and checks every flag; InvalidArgument (or the error of a file the
// flags name: TLS, auth, --config) naming the flag.
absl::StatusOr<ServerSettings> ServerSettingsFromFlags();

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVER_SETTINGS_H_
