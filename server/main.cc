// clickd: the online click-prediction server.
//
//   clickd [--address=127.0.0.1:50051] [--config=models.json] [--default_model]
//          [--data_dir=DIR] [--update_log_sync=every_request|interval|none]
//          [--snapshot_interval=5m] [--keep_snapshots=2]
//          [--metrics_address=127.0.0.1] [--metrics_port=9464]
//          [--tls_cert_file=F --tls_key_file=F [--tls_client_ca_file=F]]
//          [--auth_tokens_file=F] [--auth_cert_roles_file=F] [--auth_reload_interval_seconds=60]
//          [--admin_address=HOST:PORT] [--health_address=HOST:PORT] [--reflection]
//
// Serves clickd.v1.Clickd, grpc.health.v1 (SERVING once a model is loaded)
// and, with --reflection, server reflection, and Prometheus metrics at
// http://METRICS_ADDRESS:METRICS_PORT/metrics (docs/metrics.md).
//
// Security (docs/security.md): TLS or mTLS from PEM files that are re-read
// every --tls_refresh_interval_seconds; per-role authorization from bearer
// tokens and client-certificate names (files re-read when they change); the admin methods on their
// own
// --admin_address; a plaintext --health_address serving only
// grpc.health.v1 for probes that cannot speak TLS (Kubernetes' gRPC probes).
// Without TLS flags the server listens in plaintext, and says so loudly when
// that is not on a loopback address.
//
// With --data_dir every model is durable (docs/durability.md): restored at
// startup (newest valid snapshot + update-log replay) before the server
// reports SERVING, every update logged before it is acknowledged, snapshots
// written periodically, on demand and at shutdown. SIGTERM or SIGINT drains
// in-flight calls (up to --shutdown_grace_seconds), snapshots the models
// that changed, stops the metrics server and exits 0; calls still running
// at the end of the grace period do not hold the process (it then exits 0
// without shutdown snapshots: the update log has every acknowledged update).
//
// Model work runs on --worker_threads workers, never on gRPC's threads
// (server/executor.h); requests are checked against their cost in features
// after interactions before any work (server/request_cost.h).
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "core/base/command_line.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "google/protobuf/descriptor.h"
#include "server/auth/authorizer.h"
#include "server/auth/call_auth.h"
#include "server/auth/tls.h"
#include "server/data_dir_lock.h"
#include "server/executor.h"
#include "server/flag_checks.h"
#include "server/metrics/clickd_metrics.h"
#include "server/metrics/durability_metrics.h"
#include "server/metrics/http_exporter.h"
#include "server/metrics/registry.h"
#include "server/metrics/rpc_metrics.h"
#include "server/replication_setup.h"
#include "server/server_config.h"
#include "server/service.h"
#include "server/snapshotter.h"
#include "server/status/status_page.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50051", "host:port to listen on");
ABSL_FLAG(std::string, config, "", "JSON file declaring models (clickd.v1.ServerConfig)");
ABSL_FLAG(bool, default_model, true,
          "serve the embedded model \"default\" (FTRL-Proximal, logistic) unless the config "
          "declares one by that name");
ABSL_FLAG(int, threads, 0,
          "upper bound on gRPC's worker threads (0: gRPC's default, about one per core)");
ABSL_FLAG(uint64_t, max_candidates, 1000, "limit on candidates per Predict");
ABSL_FLAG(uint64_t, max_features_per_example, 4096, "limit on features per example");
ABSL_FLAG(uint64_t, max_examples_per_update, 10000, "limit on examples per Update message");
ABSL_FLAG(int, max_message_bytes, 16 << 20, "limit on a request's size");
ABSL_FLAG(uint64_t, max_features_after_interactions, 65536,
          "limit on the features one example yields after the model's interactions, dense "
          "values and bias included (for Predict: a candidate with its context)");
ABSL_FLAG(uint64_t, max_features_per_request, 4'000'000,
          "limit on the features after interactions of a whole Predict (the context once plus "
          "each candidate's) or Update message (every example)");
ABSL_FLAG(uint64_t, max_inline_predict_features, 1024,
          "a Predict yielding at most this many features after interactions is scored on the "
          "gRPC thread that received it, since handing it to a worker costs more (0: never)");
ABSL_FLAG(int, worker_threads, 0,
          "threads that run the model work of calls, off gRPC's threads (0: four per core; "
          "durable learners spend most of their time waiting for a disk sync, and several "
          "learners of one model share a sync)");
ABSL_FLAG(int, max_queued_calls, 1024,
          "calls waiting for a worker before new ones are refused with RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_learners_per_model, 0,
          "calls that may learn (or wait on) one model at once; further ones wait without a "
          "worker (0: half the workers, at least 1)");
ABSL_FLAG(uint64_t, max_models, 256,
          "limit on the models one process holds; CreateModel beyond it is RESOURCE_EXHAUSTED "
          "(models restored from --data_dir always load)");
ABSL_FLAG(int, shutdown_grace_seconds, 10, "how long SIGTERM waits for in-flight calls");
ABSL_FLAG(std::string, data_dir, "",
          "directory for the models' snapshots and update logs (empty: models live in memory "
          "only and are lost on exit)");
ABSL_FLAG(std::string, update_log_sync, "every_request",
          "when the update log is synced to disk: every_request (an update is acknowledged "
          "once on disk), interval (every --update_log_sync_interval_ms), none (by the OS)");
ABSL_FLAG(int, update_log_sync_interval_ms, 100, "sync period for --update_log_sync=interval");
ABSL_FLAG(bool, recover_damaged_log, false,
          "start despite a damaged update log: keep each model's records before the damage, "
          "move the damaged segments aside and report what was dropped (docs/durability.md)");
ABSL_FLAG(absl::Duration, snapshot_interval, absl::Minutes(5),
          "how often models that learned since their last snapshot are snapshotted (0: only on "
          "demand and at shutdown)");
ABSL_FLAG(int, keep_snapshots, 2, "snapshots kept per model (the newest K; at least 1)");
ABSL_FLAG(bool, snapshot_on_shutdown, true,
          "snapshot models that learned since their last snapshot when stopping on SIGTERM");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1",
          "address of the Prometheus /metrics endpoint (0.0.0.0 to expose it, e.g. in a "
          "container)");
ABSL_FLAG(int, metrics_port, 9464, "port of the Prometheus /metrics endpoint; 0 disables it");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the server: with --tls_key_file, gRPC is served over TLS "
          "(empty: plaintext)");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle: clients must present a certificate it signed (mTLS)");
ABSL_FLAG(int, tls_refresh_interval_seconds, 60,
          "how often the TLS files are re-read: rotated certificates are served to new "
          "connections without a restart");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "file of `ROLE TOKEN` lines (roles predict, learn, admin): calls need "
          "`authorization: Bearer TOKEN` (docs/security.md)");
ABSL_FLAG(std::string, auth_cert_roles_file, "",
          "file of `ROLE NAME` lines: a client certificate whose CN or SAN is NAME has ROLE "
          "(needs --tls_client_ca_file)");
ABSL_FLAG(int, auth_reload_interval_seconds, 60,
          "how often the auth files are checked for changes and re-read (0: read at start "
          "only)");
ABSL_FLAG(std::string, admin_address, "",
          "HOST:PORT serving CreateModel, DeleteModel and SnapshotModel, which --address then "
          "refuses (empty: --address serves them)");
ABSL_FLAG(std::string, health_address, "",
          "HOST:PORT serving only grpc.health.v1, in plaintext, for probes that cannot use TLS "
          "(empty: none)");
ABSL_FLAG(bool, reflection, false, "serve gRPC server reflection (on every address)");

namespace clickd {
namespace {

// The models --config declares, and the embedded default model.
absl::StatusOr<std::vector<ModelConfig>> ConfiguredModels() {
  std::vector<ModelConfig> configs;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    auto loaded = LoadServerConfig(path);
    if (!loaded.ok()) return loaded.status();
    configs = *std::move(loaded);
  }
  const bool declared_default = std::any_of(
      configs.begin(), configs.end(), [](const ModelConfig& c) { return c.name == "default"; });
  if (absl::GetFlag(FLAGS_default_model) && !declared_default) {
    configs.push_back(DefaultModelConfig());
  }
  return configs;
}

absl::Status LoadModels(ModelRegistry* registry, const std::vector<ModelConfig>& configs) {
  for (const ModelConfig& config : configs) {
    if (registry->Get(config.name) != nullptr) {
      // The data directory's model, with what it learned, wins over a fresh one.
      std::cout << "clickd: model \"" << config.name
                << "\" restored from --data_dir; its config there is kept" << std::endl;
      continue;
    }
    if (auto created = registry->Create(config); !created.ok()) return created.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<DurabilityOptions> DurabilityFromFlags() {
  DurabilityOptions options;
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  auto sync = ParseSyncMode(absl::GetFlag(FLAGS_update_log_sync));
  if (!sync.ok()) return sync.status();
  options.journal.log.sync = *sync;
  const int interval_ms = absl::GetFlag(FLAGS_update_log_sync_interval_ms);
  if (interval_ms < 1 || interval_ms > 60'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--update_log_sync_interval_ms=", interval_ms, " must be in [1, 60000]"));
  }
  options.journal.log.sync_interval = std::chrono::milliseconds(interval_ms);
  options.journal.salvage_damaged_log = absl::GetFlag(FLAGS_recover_damaged_log);
  const int keep = absl::GetFlag(FLAGS_keep_snapshots);
  if (keep < 1 || keep > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--keep_snapshots=", keep, " must be in [1, 1000]"));
  }
  options.journal.keep_snapshots = keep;
  if (absl::GetFlag(FLAGS_snapshot_interval) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--snapshot_interval must not be negative");
  }
  return options;
}

// Restores the models of --data_dir and says what it found.
absl::Status RecoverModels(ModelRegistry* registry) {
  auto recovered = registry->Recover();
  if (!recovered.ok()) return recovered.status();
  for (const RecoveredModel& m : *recovered) {
    for (const std::string& reason : m.report.rejected_snapshots) {
      std::cout << "clickd: model \"" << m.name << "\": skipped a damaged snapshot: " << reason
                << std::endl;
    }
    if (m.report.log_restarted) {
      std::cout << "clickd: model \"" << m.name << "\": no update log behind snapshot "
                << m.report.snapshot_sequence << " (restored from a backup?); it starts there"
                << std::endl;
    }
    for (const std::string& damage : m.report.covered_log_damage) {
      std::cout << "clickd: model \"" << m.name
                << "\": damaged update log the snapshot covers: " << damage << std::endl;
    }
    if (!m.report.salvaged_log_damage.empty()) {
      std::cout << "clickd: model \"" << m.name
                << "\": recovered a damaged update log: " << m.report.salvaged_log_damage
                << "; dropped records from " << m.report.dropped_from << "; moved aside: "
                << (m.report.moved_aside.empty() ? "nothing"
                                                 : absl::StrJoin(m.report.moved_aside, ", "))
                << std::endl;
    }
    if (m.report.torn_tail_bytes > 0) {
      std::cout << "clickd: model \"" << m.name << "\": cut a torn update-log tail of "
                << m.report.torn_tail_bytes << " bytes" << std::endl;
    }
    std::cout << "clickd: restored model \"" << m.name << "\" from "
              << (m.report.snapshot_sequence == 0
                      ? std::string("no snapshot")
                      : absl::StrCat("snapshot ", m.report.snapshot_sequence))
              << " + " << m.report.replayed_records << " update-log records in " << m.report.seconds
              << " s" << std::endl;
  }
  return absl::OkStatus();
}

void LogSnapshot(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result) {
  if (result.ok()) {
    std::cout << "clickd: snapshot of \"" << model.name() << "\" at sequence " << result->sequence
              << ": " << result->coordinates << " coordinates, " << result->bytes << " bytes in "
              << result->seconds << " s" << std::endl;
  } else {
    std::cerr << "clickd: snapshot of \"" << model.name()
              << "\" failed: " << result.status().message() << std::endl;
  }
}

// The methods of clickd.v1.Clickd, as the request metrics label them.
std::vector<std::string> ClickdMethods() {
  std::vector<std::string> methods;
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          v1::Clickd::service_full_name());
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    methods.push_back(service->method(i)->name());
  }
  return methods;
}

// Starts the /metrics endpoint unless --metrics_port is 0 (then returns
// null without error).
absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> StartMetrics(
    const metrics::Registry* registry, std::vector<metrics::HttpPage> pages) {
  const int port = absl::GetFlag(FLAGS_metrics_port);
  if (port == 0) return nullptr;
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port=", port, " is not a port (1-65535, or 0 to disable)"));
  }
  return metrics::HttpExporter::Start(absl::GetFlag(FLAGS_metrics_address), port, registry,
                                      std::move(pages));
}

// The security flags, checked: what the servers are built with.
struct Security {
  std::shared_ptr<grpc::ServerCredentials> credentials;  // of --address and --admin_address
  bool tls = false;
  std::unique_ptr<auth::AuthFiles> auth;  // null: auth is off
};

absl::StatusOr<Security> SecurityFromFlags() {
  const std::pair<const char*, std::string> addresses[] = {
      {"--admin_address", absl::GetFlag(FLAGS_admin_address)},
      {"--health_address", absl::GetFlag(FLAGS_health_address)}};
  for (const auto& [flag, address] : addresses) {
    if (address.empty()) continue;
    if (absl::Status s = auth::CheckAddress(flag, address); !s.ok()) return s;
  }
  Security security;
  auth::TlsFiles files;
  files.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  files.key_file = absl::GetFlag(FLAGS_tls_key_file);
  files.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  files.refresh_interval_seconds = absl::GetFlag(FLAGS_tls_refresh_interval_seconds);
  security.tls = !files.cert_file.empty() || !files.key_file.empty();
  if (!security.tls && !files.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca_file needs --tls_cert_file and --tls_key_file");
  }
  if (security.tls) {
    auto credentials = auth::TlsServerCredentialsFromFiles(files);
    if (!credentials.ok()) return credentials.status();
    security.credentials = *std::move(credentials);
  } else {
    security.credentials = grpc::InsecureServerCredentials();
  }
  const std::string tokens = absl::GetFlag(FLAGS_auth_tokens_file);
  const std::string cert_roles = absl::GetFlag(FLAGS_auth_cert_roles_file);
  if (!cert_roles.empty() && files.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--auth_cert_roles_file needs --tls_client_ca_file (client certificates under mTLS)");
  }
  const int reload = absl::GetFlag(FLAGS_auth_reload_interval_seconds);
  if (reload < 0 || reload > 86'400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_reload_interval_seconds=", reload, " must be in [0, 86400]"));
  }
  if (!tokens.empty() || !cert_roles.empty()) {
    auto loaded = auth::AuthFiles::Load(tokens, cert_roles);
    if (!loaded.ok()) return loaded.status();
    security.auth = *std::move(loaded);
  }
  return security;
}

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
// reflection with --reflection); null if it cannot listen. The servers of
// one process share `quota` (null: gRPC's default), so --threads bounds
// them all together.
std::unique_ptr<grpc::Server> StartServer(const std::string& address,
                                          std::shared_ptr<grpc::ServerCredentials> credentials,
                                          const std::vector<grpc::Service*>& services,
                                          const Limits& limits, const grpc::ResourceQuota* quota,
                                          int* port) {
  grpc::ServerBuilder builder;
  // Without this, gRPC sets SO_REUSEPORT and a second clickd on a busy port
  // would start and split the connections with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, std::move(credentials), port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (!absl::GetFlag(FLAGS_reflection)) builder.SetOption(std::make_unique<NoReflectionOption>());
  builder.SetMaxReceiveMessageSize(limits.max_message_bytes);
  if (quota != nullptr) builder.SetResourceQuota(*quota);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) return nullptr;
  return server;
}

// The process's gRPC servers: --address first, then --admin_address and
// --health_address when they are set.
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

// Starts the servers of the address flags, warning about plaintext on a
// non-loopback address.
absl::StatusOr<Servers> StartServers(const Security& security, const Limits& limits,
                                     const ServedServices& services) {
  std::optional<grpc::ResourceQuota> quota;
  if (const int threads = absl::GetFlag(FLAGS_threads); threads > 0) {
    quota.emplace("clickd");
    quota->SetMaxThreads(threads);
  }
  const grpc::ResourceQuota* shared_quota = quota.has_value() ? &*quota : nullptr;
  Servers servers;
  const std::string address = absl::GetFlag(FLAGS_address);
  WarnIfExposed("--address", address, security);
  servers.all.push_back(StartServer(address, security.credentials, {services.main}, limits,
                                    shared_quota, &servers.port));
  if (servers.all.back() == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  if (const std::string admin = absl::GetFlag(FLAGS_admin_address); !admin.empty()) {
    WarnIfExposed("--admin_address", admin, security);
    int port = 0;
    servers.all.push_back(
        StartServer(admin, security.credentials, {services.admin}, limits, shared_quota, &port));
    if (servers.all.back() == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", admin, " (--admin_address)"));
    }
    std::cout << "clickd: admin methods on " << admin << " (port " << port << ")" << std::endl;
  }
  if (const std::string health = absl::GetFlag(FLAGS_health_address); !health.empty()) {
    int port = 0;
    servers.all.push_back(StartServer(health, grpc::InsecureServerCredentials(), {services.health},
                                      limits, shared_quota, &port));
    if (servers.all.back() == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", health, " (--health_address)"));
    }
    std::cout << "clickd: grpc.health.v1 only, plaintext, on " << health << " (port " << port << ")"
              << std::endl;
  }
  return servers;
}

// The flags of the listening address, gRPC and the request limits, checked
// before anything starts: a typo stops the server with exit 2 naming the
// flag and its range (docs/operations.md lists them).
absl::Status CheckServingFlags() {
  if (absl::Status s = auth::CheckAddress("--address", absl::GetFlag(FLAGS_address)); !s.ok()) {
    return s;
  }
  const struct {
    const char* name;
    int64_t value, lo, hi;
  } ranges[] = {
      {"threads", absl::GetFlag(FLAGS_threads), 0, 1024},
      {"max_candidates", static_cast<int64_t>(absl::GetFlag(FLAGS_max_candidates)), 1, 1'000'000},
      {"max_features_per_example",
       static_cast<int64_t>(absl::GetFlag(FLAGS_max_features_per_example)), 1, 1 << 20},
      {"max_examples_per_update",
       static_cast<int64_t>(absl::GetFlag(FLAGS_max_examples_per_update)), 1, 1'000'000},
      {"max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), 1024, 1 << 30},
      {"max_models", static_cast<int64_t>(absl::GetFlag(FLAGS_max_models)), 1, 100'000},
      {"max_inline_predict_features",
       static_cast<int64_t>(absl::GetFlag(FLAGS_max_inline_predict_features)), 0, 65536},
      {"metrics_port", absl::GetFlag(FLAGS_metrics_port), 0, 65535},
  };
  for (const auto& r : ranges) {
    // uint64 flags above INT64_MAX read as negative here, and are refused too.
    if (absl::Status s = CheckFlagRange(r.name, r.value, r.lo, r.hi); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Limits LimitsFromFlags() {
  Limits limits;
  limits.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  limits.max_features_per_example = absl::GetFlag(FLAGS_max_features_per_example);
  limits.max_examples_per_update = absl::GetFlag(FLAGS_max_examples_per_update);
  limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  limits.max_features_after_interactions = absl::GetFlag(FLAGS_max_features_after_interactions);
  limits.max_features_per_request = absl::GetFlag(FLAGS_max_features_per_request);
  limits.max_inline_predict_features = absl::GetFlag(FLAGS_max_inline_predict_features);
  return limits;
}

// The flags of the request costs and of the executor (server/executor.h),
// checked: the limits must hold at least one example and stay small enough
// that an accepted request, and its replay at restart, fits in memory.
absl::StatusOr<ExecutorOptions> IsolationFromFlags() {
  constexpr uint64_t kMaxPerExample = uint64_t{1} << 26;  // 64M features: 1 GiB hashed
  const uint64_t per_example = absl::GetFlag(FLAGS_max_features_after_interactions);
  if (per_example < 1 || per_example > kMaxPerExample) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_features_after_interactions=", per_example, " must be in [1, ",
                     kMaxPerExample, "]"));
  }
  const uint64_t per_request = absl::GetFlag(FLAGS_max_features_per_request);
  if (per_request < per_example || per_request > (uint64_t{1} << 32)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_features_per_request=", per_request,
                     " must be in [--max_features_after_interactions, 2^32]"));
  }
  const int grace = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  if (grace < 0 || grace > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shutdown_grace_seconds=", grace, " must be in [0, 3600]"));
  }
  ExecutorOptions options;
  const int threads = absl::GetFlag(FLAGS_worker_threads);
  if (threads < 0 || threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker_threads=", threads, " must be in [0, 1024]"));
  }
  options.threads = threads > 0
                        ? threads
                        : 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int queued = absl::GetFlag(FLAGS_max_queued_calls);
  if (queued < 1 || queued > 1'000'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_queued_calls=", queued, " must be in [1, 1000000]"));
  }
  options.max_queued = static_cast<size_t>(queued);
  const int learners = absl::GetFlag(FLAGS_max_learners_per_model);
  if (learners < 0 || learners > options.threads) {
    return absl::InvalidArgumentError(absl::StrCat("--max_learners_per_model=", learners,
                                                   " must be in [0, ", options.threads,
                                                   "] (the worker threads)"));
  }
  options.max_running_per_key = learners > 0 ? learners : std::max(1, options.threads / 2);
  return options;
}

// Stops the server within `grace`: gRPC stops accepting calls and the
// executor finishes those in flight; at the deadline gRPC cancels the
// calls still open and the executor cancels the queued ones (UNAVAILABLE).
// Returns false if calls still run shortly after the deadline (a worker
// stuck in a long learn): the caller then exits without waiting for them.
bool DrainAndStop(const std::vector<std::unique_ptr<grpc::Server>>& servers, Executor* executor,
                  std::chrono::seconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
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

int Serve() {
  const double start_time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Block the shutdown signals before gRPC starts its threads, so that only
  // sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The metrics registry first: models' update logs report their syncs to
  // it from the moment they are restored.
  metrics::Registry metrics_registry;
  metrics::DurabilityMetrics durability_metrics(&metrics_registry);
  auto durability = DurabilityFromFlags();
  if (!durability.ok()) {
    std::cerr << "clickd: " << durability.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<DataDirLock> data_dir_lock;
  if (!durability->data_dir.empty()) {
    auto locked = DataDirLock::Acquire(durability->data_dir);
    if (!locked.ok()) {
      std::cerr << "clickd: " << locked.status().message() << "\n";
      return 2;
    }
    data_dir_lock = *std::move(locked);
  }
  // Checked before restoring models, which may take long.
  auto isolation = IsolationFromFlags();
  if (!isolation.ok()) {
    std::cerr << "clickd: " << isolation.status().message() << "\n";
    return 2;
  }
  durability->sync_observer = [&durability_metrics](const std::string& model) {
    return durability_metrics.SyncObserver(model);
  };
  durability->on_snapshot = [&durability_metrics](const ServedModel& model,
                                                  const absl::StatusOr<SnapshotReport>& result) {
    if (result.ok()) durability_metrics.ObserveSnapshot(model.name(), result->seconds);
    LogSnapshot(model, result);
  };
  auto security = SecurityFromFlags();
  if (!security.ok()) {
    std::cerr << "clickd: " << security.status().message() << "\n";
    return 2;
  }
  if (absl::Status s = CheckServingFlags(); !s.ok()) {
    std::cerr << "clickd: " << s.message() << "\n";
    return 2;
  }
  auto replicated = ReplicationFromFlags();
  auto configured = ConfiguredModels();
  for (const absl::Status& s : {replicated.status(), configured.status()}) {
    if (!s.ok()) {
      std::cerr << "clickd: " << s.message() << "\n";
      return 2;
    }
  }
  // A replica's models live in memory: the replicated log and the replica
  // snapshots are their durability, not per-model update logs.
  const std::string data_dir = durability->data_dir;
  if (*replicated) durability->data_dir.clear();
  ModelRegistry registry(*std::move(durability),
                         RegistryLimits{.max_models = absl::GetFlag(FLAGS_max_models)});
  std::unique_ptr<Replication> replication;
  if (*replicated) {
    auto started = StartReplication(
        &registry, data_dir, absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_snapshot_interval)),
        *configured, &metrics_registry);
    if (!started.ok()) {
      std::cerr << "clickd: replication: " << started.status().message() << "\n";
      return started.status().code() == absl::StatusCode::kUnavailable ? 1 : 2;
    }
    replication = *std::move(started);
  }
  if (absl::Status s = RecoverModels(&registry); !s.ok()) {
    std::cerr << "clickd: " << s.message() << "\n";
    if (s.code() == absl::StatusCode::kDataLoss) {
      std::cerr
          << "clickd: if the damage is in an update log, --recover_damaged_log starts anyway, "
             "keeping the records before it (docs/durability.md)\n";
    }
    return 2;
  }
  if (absl::Status s = *replicated ? absl::OkStatus() : LoadModels(&registry, *configured);
      !s.ok()) {
    std::cerr << "clickd: " << s.message() << "\n";
    return 2;
  }
  Snapshotter snapshotter(&registry,
                          absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_snapshot_interval)));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  // Each server's health service (main, admin, health address), set once
  // that server has started; RPC threads may call update_health before
  // that, hence the atomics.
  std::array<std::atomic<grpc::HealthCheckServiceInterface*>, 3> health{};
  // Serialized so that a create and a delete racing cannot leave the status
  // of the one that read the model count first.
  Mutex health_mu;
  auto update_health = [&registry, &health, &health_mu, &durability_metrics] {
    // A deleted model's histogram series go with it.
    durability_metrics.RemoveDeletedModels(registry);
    MutexLock lock(&health_mu);
    for (auto& service : health) {
      if (auto* h = service.load()) h->SetServingStatus(registry.size() > 0);
    }
  };
  metrics::RegisterProcessMetrics(&metrics_registry, start_time);
  metrics::RegisterModelMetrics(&metrics_registry, &registry);
  metrics::DurabilityMetrics::RegisterModelFamilies(&metrics_registry, &registry);
  metrics::RpcMetrics rpc_metrics(&metrics_registry, ClickdMethods());
  // The status page at / on the metrics port (server/status/status_page.h);
  // declared before the exporter, which serves it, so that it outlives it.
  status::StatusPage status_page(&registry);
  auto exporter = StartMetrics(&metrics_registry, status_page.Pages());
  if (!exporter.ok()) {
    std::cerr << "clickd: " << exporter.status().message() << "\n";
    return 1;
  }
  if (*exporter != nullptr) {
    std::cout << "clickd: metrics on http://" << absl::GetFlag(FLAGS_metrics_address) << ":"
              << (*exporter)->port() << "/metrics" << std::endl;
    status_page.StartSampling();
  }

  const Limits limits = LimitsFromFlags();
  const std::string address = absl::GetFlag(FLAGS_address);
  const std::string admin_address = absl::GetFlag(FLAGS_admin_address);
  const auth::AuthFiles* authorizer = security->auth.get();
  Executor executor(*isolation);
  ModelWriter* writer = replication != nullptr ? replication->writer.get() : nullptr;
  ClickdService service(
      &registry, limits, update_health, &rpc_metrics, &snapshotter, &executor,
      {authorizer, admin_address.empty() ? auth::MethodSet::kAll : auth::MethodSet::kNoAdmin},
      writer);
  ClickdService admin_service(&registry, limits, update_health, &rpc_metrics, &snapshotter,
                              &executor, {authorizer, auth::MethodSet::kAdminOnly}, writer);
  // The health address refuses every clickd method; registering the
  // service gives that server the callback queue gRPC requires of a server
  // (the health service alone is added too late for its check).
  ClickdService refusing_service(&registry, limits, update_health, &rpc_metrics, &snapshotter,
                                 &executor, {authorizer, auth::MethodSet::kNone}, writer);

  auto servers = StartServers(*security, limits, {&service, &admin_service, &refusing_service});
  if (!servers.ok()) {
    std::cerr << "clickd: " << servers.status().message() << "\n";
    return 1;
  }
  for (size_t i = 0; i < servers->all.size(); ++i) {
    health[i].store(servers->all[i]->GetHealthCheckService());
  }
  update_health();
  if (security->tls) {
    std::cout << "clickd: TLS"
              << (absl::GetFlag(FLAGS_tls_client_ca_file).empty() ? ""
                                                                  : " with client certificates")
              << ", files re-read every " << absl::GetFlag(FLAGS_tls_refresh_interval_seconds)
              << " s" << std::endl;
  }
  std::optional<auth::AuthFilesReloader> auth_reloader;
  if (security->auth != nullptr) {
    const int reload = absl::GetFlag(FLAGS_auth_reload_interval_seconds);
    std::cout << "clickd: calls need credentials (--auth_tokens_file, --auth_cert_roles_file"
              << (reload > 0 ? absl::StrCat(", re-read every ", reload, " s") : "") << ")"
              << std::endl;
    if (reload > 0) auth_reloader.emplace(security->auth.get(), std::chrono::seconds(reload));
  }
  std::cout << "clickd: serving " << registry.size() << " model(s) on " << address << " (port "
            << servers->port << ")" << std::endl;

  int received = 0;
  sigwait(&signals, &received);
  std::cout << "clickd: signal " << received << ", draining" << std::endl;
  for (auto& s : servers->all) s->GetHealthCheckService()->SetServingStatus(false);
  const auto grace = std::chrono::seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  if (!DrainAndStop(servers->all, &executor, grace)) {
    // Snapshots would wait for the running learn; the update log already
    // holds every update that was acknowledged (and maybe the running one).
    std::cout << "clickd: " << executor.running()
              << " call(s) still running after the grace period; exiting without shutdown "
                 "snapshots"
              << std::endl;
    std::cerr.flush();
    std::_Exit(0);
  }
  if (registry.durable() && absl::GetFlag(FLAGS_snapshot_on_shutdown)) {
    const int failures = snapshotter.SnapshotChanged();
    if (failures > 0) {
      // The update log still holds everything: a restart replays it.
      std::cerr << "clickd: " << failures << " shutdown snapshot(s) failed" << std::endl;
    }
  }
  if (replication != nullptr && !data_dir.empty() && absl::GetFlag(FLAGS_snapshot_on_shutdown)) {
    // The stream holds everything; a local snapshot only shortens the next
    // start's catch-up.
    if (auto report = replication->replica->Snapshot(/*publish=*/false); report.ok()) {
      std::cout << "clickd: replica snapshot at sequence " << report->sequence << std::endl;
    } else {
      std::cerr << "clickd: replica snapshot failed: " << report.status().message() << std::endl;
    }
  }
  if (*exporter != nullptr) (*exporter)->Stop();
  replication.reset();  // after the exporter: its scrapes read the replica
  std::cout << "clickd: stopped" << std::endl;
  return 0;
}

}  // namespace

// --help. Abseil's own lists only the flags of a file named like the program
// (so "No flags matched" here) and exits 1; this one lists every flag clickd
// defines, with its default, and exits 0. Abseil's own flags (--flagfile,
// --fromenv, ...) stay in --helpfull.
namespace {

// The source root as the compiler named this file ("../../" under Ninja):
// every flag of clickd is defined in a file under it, none of Abseil's is.
std::string SourceRoot() {
  absl::string_view file = __FILE__;
  if (!absl::ConsumeSuffix(&file, "server/main.cc")) return "";
  return std::string(file);
}

bool IsOwnFile(absl::string_view file) { return absl::StartsWith(file, SourceRoot()); }

// Points Abseil's --helpshort and --helppackage at clickd's own files too.
void SetUpUsage() {
  absl::SetProgramUsageMessage(
      "clickd [--address=HOST:PORT] [--config=FILE] [--data_dir=DIR] [--metrics_port=PORT] "
      "[flags]");
  absl::FlagsUsageConfig config;
  config.contains_help_flags = IsOwnFile;
  config.contains_helpshort_flags = IsOwnFile;
  config.contains_helppackage_flags = IsOwnFile;
  absl::SetFlagsUsageConfig(config);
}

// Prints every flag defined in clickd's sources, by file, in Abseil's
// --helpfull format: name, help, default (and the current value if set).
void PrintHelp() {
  std::map<std::string, std::map<std::string, const absl::CommandLineFlag*>> by_file;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsOwnFile(flag->Filename())) by_file[flag->Filename()][std::string(name)] = flag;
  }
  std::cout << "usage: " << absl::ProgramUsageMessage() << "\n";
  for (const auto& [file, flags] : by_file) {
    std::cout << "\n  Flags from " << file.substr(SourceRoot().size()) << ":\n";
    // The per-flag printer of Abseil's --helpfull (Abseil 20220623 has no
    // public one), so that both lists read the same.
    for (const auto& [name, flag] : flags) absl::flags_internal::FlagHelp(std::cout, *flag);
  }
  std::cout << "\nAbseil's own flags (--flagfile, --fromenv, --helpfull, ...): clickd "
               "--helpfull\n";
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  clickd::SetUpUsage();
  const bool help = clickd::TakeHelpFlag(argc, argv);
  absl::ParseCommandLine(argc, argv);
  if (help) {
    clickd::PrintHelp();
    return 0;
  }
  return clickd::Serve();
}
