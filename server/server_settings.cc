#include "server/server_settings.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/auth/authorizer.h"
#include "server/auth/tls.h"
#include "server/flag_checks.h"
#include "server/replication_setup.h"
#include "server/request_cost.h"
#include "server/server_config.h"

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
ABSL_FLAG(uint64_t, max_feedback_items, 10000, "limit on items per Feedback request");
ABSL_FLAG(int, max_event_time_skew_seconds, 300,
          "how far ahead of the server's clock a FeedbackItem.event_time_unix_micros may be "
          "(INVALID_ARGUMENT beyond it; a click cannot happen in the future, only clocks differ)");
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
ABSL_FLAG(uint64_t, max_quiet_inline_predict_features, 16384,
          "a larger Predict, up to this many features after interactions, is scored on the gRPC "
          "thread too while the workers are idle and no other such Predict is (0: never); under "
          "load it goes to the workers");
ABSL_FLAG(uint64_t, max_inline_update_features, 16384,
          "an Update or stream message of at most this many features after interactions, on a "
          "memory-only model, is learned on the gRPC thread that received it while no other such "
          "work is and no long call learns on that model (0: never); else on the workers");
ABSL_FLAG(uint64_t, max_open_streams, 256,
          "streaming calls (UpdateStream, UpdateStreamAcked, FeedbackStream) open at once, "
          "server-wide; each holds at most one message of --max_message_bytes, and a stream "
          "beyond the limit is refused when it opens");
ABSL_FLAG(uint64_t, max_concurrent_digests, 1,
          "GetModel state_digests computed at once, server-wide; each holds a copy of its "
          "model's coordinates while it runs, and one beyond the limit is refused with "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(uint64_t, max_factor_bytes_per_update, uint64_t{64} << 20,
          "the factor rows an Update (or stream message) may add to a model with factors: its "
          "features of factorization.fields times a row's bytes (8 + 8 x dim, x fields for ffm), "
          "refused with RESOURCE_EXHAUSTED beyond it");
ABSL_FLAG(int, handshake_timeout_seconds, 10,
          "a connection that has not completed its TLS handshake and sent its HTTP/2 settings "
          "within this time is closed (it holds a file descriptor)");
ABSL_FLAG(int, max_connection_idle_seconds, 300,
          "a connection without a call for this long is closed (GOAWAY; gRPC clients reconnect "
          "when they next call)");
ABSL_FLAG(int, stream_idle_timeout_seconds, 120,
          "a streaming call (UpdateStream, UpdateStreamAcked, FeedbackStream) that waits this "
          "long for its caller's next message is cancelled, freeing its --max_open_streams place");
ABSL_FLAG(int, worker_threads, 0,
          "threads that run the model work of calls, off gRPC's threads (0: four per core; "
          "durable learners spend most of their time waiting for a disk sync, and several "
          "learners of one model share a sync)");
ABSL_FLAG(int, max_queued_calls, 1024,
          "calls waiting for a worker before new ones are refused with RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_learners_per_model, 0,
          "calls that may learn (or wait on) one model at once; further ones wait without a "
          "worker (0: half the workers, at least 1)");
ABSL_FLAG(uint64_t, max_model_fixed_bytes, uint64_t{1} << 30,
          "limit on the memory a CreateModel's config commits before the model learns "
          "anything (feature admission's counters, compact tables' directories, for the "
          "primary and each variant)");
ABSL_FLAG(uint64_t, max_dense_work_per_update, uint64_t{1} << 32,
          "limit on the dense learner's work an Update or stream message may ask for, in "
          "multiply-adds: examples with dense values times one step (ada_full: dim^3)");
ABSL_FLAG(uint64_t, max_models, 256,
          "limit on the models one process holds; CreateModel beyond it is RESOURCE_EXHAUSTED "
          "(models restored from --data_dir always load; at start the embedded default model "
          "is left out when --config's models fill it)");
ABSL_FLAG(int, shutdown_grace_seconds, 10, "how long SIGTERM waits for in-flight calls");
ABSL_FLAG(std::string, data_dir, "",
          "directory for the models' snapshots and update logs (empty: models live in memory "
          "only and are lost on exit)");
ABSL_FLAG(std::string, update_log_sync, "every_request",
          "when the update log is synced to disk: every_request (an update is acknowledged "
          "once on disk), interval (every --update_log_sync_interval_ms), none (by the OS)");
ABSL_FLAG(int, update_log_sync_interval_ms, 100, "sync period for --update_log_sync=interval");
ABSL_FLAG(int, update_log_group_wait_us, 2000,
          "--update_log_sync=every_request: how long a sync may wait for the records of writers "
          "that took turns at the last sync, so that they share it; never longer than the last "
          "sync took, never for a lone writer (0: never wait)");
ABSL_FLAG(bool, recover_damaged_log, false,
          "start despite a damaged update log: keep each model's records before the damage, "
          "move the damaged segments aside and report what was dropped (docs/durability.md)");
ABSL_FLAG(int64_t, idempotency_window_seconds, 600,
          "how long a model remembers an Update's or Feedback's idempotency_key, from the time it "
          "was first learned (without --replication; docs/api.md#idempotency)");
ABSL_FLAG(uint64_t, idempotency_max_keys, 100000,
          "idempotency keys a model remembers at most; beyond it the oldest is forgotten");
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

// The models --config declares, and the embedded default model (then
// *implicit_default is set).
absl::StatusOr<std::vector<ModelConfig>> ConfiguredModels(bool* implicit_default) {
  std::vector<ModelConfig> configs;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    auto loaded = LoadServerConfig(path);
    if (!loaded.ok()) return loaded.status();
    configs = *std::move(loaded);
  }
  const bool declared_default = std::any_of(
      configs.begin(), configs.end(), [](const ModelConfig& c) { return c.name == "default"; });
  *implicit_default = absl::GetFlag(FLAGS_default_model) && !declared_default;
  if (*implicit_default) configs.push_back(DefaultModelConfig());
  return configs;
}

absl::StatusOr<DurabilityOptions> DurabilityFromFlags() {
  DurabilityOptions options;
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  auto sync = ParseSyncMode(absl::GetFlag(FLAGS_update_log_sync));
  if (!sync.ok()) return sync.status();
  options.journal.log.sync = *sync;
  const int interval_ms = absl::GetFlag(FLAGS_update_log_sync_interval_ms);
  if (absl::Status s =
          CheckFlagRange("update_log_sync_interval_ms", int64_t{interval_ms}, 1, 60'000);
      !s.ok()) {
    return s;
  }
  options.journal.log.sync_interval = std::chrono::milliseconds(interval_ms);
  const int group_wait_us = absl::GetFlag(FLAGS_update_log_group_wait_us);
  if (absl::Status s =
          CheckFlagRange("update_log_group_wait_us", int64_t{group_wait_us}, 0, 1'000'000);
      !s.ok()) {
    return s;
  }
  options.journal.log.max_group_wait = std::chrono::microseconds(group_wait_us);
  options.journal.salvage_damaged_log = absl::GetFlag(FLAGS_recover_damaged_log);
  const int keep = absl::GetFlag(FLAGS_keep_snapshots);
  if (absl::Status s = CheckFlagRange("keep_snapshots", int64_t{keep}, 1, 1000); !s.ok()) return s;
  options.journal.keep_snapshots = keep;
  const int64_t window = absl::GetFlag(FLAGS_idempotency_window_seconds);
  if (absl::Status s = CheckFlagRange("idempotency_window_seconds", window, 1, 7 * 24 * 3600);
      !s.ok()) {
    return s;
  }
  const uint64_t max_keys = absl::GetFlag(FLAGS_idempotency_max_keys);
  if (absl::Status s = CheckFlagRange("idempotency_max_keys", max_keys, 1, 10'000'000); !s.ok()) {
    return s;
  }
  options.journal.idempotency = {.window_us = window * 1'000'000, .max_keys = max_keys};
  if (absl::GetFlag(FLAGS_snapshot_interval) < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--snapshot_interval must not be negative");
  }
  return options;
}

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
  security.client_certificates = !files.client_ca_file.empty();
  security.tls_refresh_interval_seconds = files.refresh_interval_seconds;
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
  if (absl::Status s = CheckFlagRange("auth_reload_interval_seconds", int64_t{reload}, 0, 86'400);
      !s.ok()) {
    return s;
  }
  security.auth_reload_interval_seconds = reload;
  if (!tokens.empty() || !cert_roles.empty()) {
    auto loaded = auth::AuthFiles::Load(tokens, cert_roles);
    if (!loaded.ok()) return loaded.status();
    security.auth = *std::move(loaded);
  }
  return security;
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
  } signed_ranges[] = {
      {"threads", absl::GetFlag(FLAGS_threads), 0, 1024},
      {"max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), 1024, 1 << 30},
      {"metrics_port", absl::GetFlag(FLAGS_metrics_port), 0, 65535},
      {"handshake_timeout_seconds", absl::GetFlag(FLAGS_handshake_timeout_seconds), 1, 300},
      {"max_connection_idle_seconds", absl::GetFlag(FLAGS_max_connection_idle_seconds), 1, 86'400},
      {"stream_idle_timeout_seconds", absl::GetFlag(FLAGS_stream_idle_timeout_seconds), 1, 86'400},
      {"max_event_time_skew_seconds", absl::GetFlag(FLAGS_max_event_time_skew_seconds), 0, 86'400},
  };
  for (const auto& r : signed_ranges) {
    if (absl::Status s = CheckFlagRange(r.name, r.value, r.lo, r.hi); !s.ok()) return s;
  }
  const struct {
    const char* name;
    uint64_t value, lo, hi;
  } unsigned_ranges[] = {
      {"max_candidates", absl::GetFlag(FLAGS_max_candidates), 1, 1'000'000},
      {"max_features_per_example", absl::GetFlag(FLAGS_max_features_per_example), 1, 1 << 20},
      {"max_examples_per_update", absl::GetFlag(FLAGS_max_examples_per_update), 1, 1'000'000},
      {"max_feedback_items", absl::GetFlag(FLAGS_max_feedback_items), 1, 1'000'000},
      {"max_models", absl::GetFlag(FLAGS_max_models), 1, 100'000},
      {"max_dense_work_per_update", absl::GetFlag(FLAGS_max_dense_work_per_update),
       uint64_t{1} << 20, uint64_t{1} << 50},
      {"max_model_fixed_bytes", absl::GetFlag(FLAGS_max_model_fixed_bytes), uint64_t{1} << 20,
       uint64_t{1} << 40},
      {"max_inline_predict_features", absl::GetFlag(FLAGS_max_inline_predict_features), 0, 65536},
      {"max_quiet_inline_predict_features", absl::GetFlag(FLAGS_max_quiet_inline_predict_features),
       0, 1 << 20},
      {"max_open_streams", absl::GetFlag(FLAGS_max_open_streams), 1, 1'000'000},
      {"max_concurrent_digests", absl::GetFlag(FLAGS_max_concurrent_digests), 1, 64},
      {"max_factor_bytes_per_update", absl::GetFlag(FLAGS_max_factor_bytes_per_update),
       uint64_t{1} << 16, uint64_t{1} << 40},
      {"max_inline_update_features", absl::GetFlag(FLAGS_max_inline_update_features), 0, 1 << 20},
  };
  for (const auto& r : unsigned_ranges) {
    if (absl::Status s = CheckFlagRange(r.name, r.value, r.lo, r.hi); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Limits LimitsFromFlags() {
  Limits limits;
  limits.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  limits.max_features_per_example = absl::GetFlag(FLAGS_max_features_per_example);
  limits.max_examples_per_update = absl::GetFlag(FLAGS_max_examples_per_update);
  limits.max_feedback_items = absl::GetFlag(FLAGS_max_feedback_items);
  limits.max_event_time_skew_seconds = absl::GetFlag(FLAGS_max_event_time_skew_seconds);
  limits.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  limits.max_features_after_interactions = absl::GetFlag(FLAGS_max_features_after_interactions);
  limits.max_features_per_request = absl::GetFlag(FLAGS_max_features_per_request);
  limits.max_inline_predict_features = absl::GetFlag(FLAGS_max_inline_predict_features);
  limits.max_quiet_inline_predict_features = absl::GetFlag(FLAGS_max_quiet_inline_predict_features);
  limits.max_inline_update_features = absl::GetFlag(FLAGS_max_inline_update_features);
  limits.max_open_streams = absl::GetFlag(FLAGS_max_open_streams);
  limits.max_concurrent_digests = absl::GetFlag(FLAGS_max_concurrent_digests);
  limits.max_factor_bytes_per_update = absl::GetFlag(FLAGS_max_factor_bytes_per_update);
  limits.max_model_fixed_bytes = absl::GetFlag(FLAGS_max_model_fixed_bytes);
  limits.max_dense_work_per_update = absl::GetFlag(FLAGS_max_dense_work_per_update);
  limits.handshake_timeout_seconds = absl::GetFlag(FLAGS_handshake_timeout_seconds);
  limits.max_connection_idle_seconds = absl::GetFlag(FLAGS_max_connection_idle_seconds);
  limits.stream_idle_timeout_seconds = absl::GetFlag(FLAGS_stream_idle_timeout_seconds);
  return limits;
}

// The flags of the request costs and of the executor (server/executor.h),
// checked: the limits must hold at least one example and stay small enough
// that an accepted request, and its replay at restart, fits in memory.
absl::StatusOr<ExecutorOptions> IsolationFromFlags() {
  constexpr uint64_t kMaxPerExample = uint64_t{1} << 26;  // 64M features: 1 GiB hashed
  const uint64_t per_example = absl::GetFlag(FLAGS_max_features_after_interactions);
  if (absl::Status s = CheckFlagRange("max_features_after_interactions", per_example, uint64_t{1},
                                      kMaxPerExample);
      !s.ok()) {
    return s;
  }
  const uint64_t per_request = absl::GetFlag(FLAGS_max_features_per_request);
  if (absl::Status s =
          CheckFlagRange("max_features_per_request", per_request, per_example, uint64_t{1} << 32);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (from --max_features_after_interactions to 2^32)"));
  }
  const int grace = absl::GetFlag(FLAGS_shutdown_grace_seconds);
  if (absl::Status s = CheckFlagRange("shutdown_grace_seconds", int64_t{grace}, 0, 3600); !s.ok()) {
    return s;
  }
  ExecutorOptions options;
  const int threads = absl::GetFlag(FLAGS_worker_threads);
  if (absl::Status s = CheckFlagRange("worker_threads", int64_t{threads}, 0, 1024); !s.ok())
    return s;
  options.threads = threads > 0
                        ? threads
                        : 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int queued = absl::GetFlag(FLAGS_max_queued_calls);
  if (absl::Status s = CheckFlagRange("max_queued_calls", int64_t{queued}, 1, 1'000'000); !s.ok()) {
    return s;
  }
  options.max_queued = static_cast<size_t>(queued);
  const int learners = absl::GetFlag(FLAGS_max_learners_per_model);
  if (absl::Status s =
          CheckFlagRange("max_learners_per_model", int64_t{learners}, 0, options.threads);
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.message(), " (the worker threads)"));
  }
  options.max_running_per_key = learners > 0 ? learners : std::max(1, options.threads / 2);
  return options;
}

Addresses AddressesFromFlags() {
  Addresses addresses;
  addresses.main = absl::GetFlag(FLAGS_address);
  addresses.admin = absl::GetFlag(FLAGS_admin_address);
  addresses.health = absl::GetFlag(FLAGS_health_address);
  addresses.grpc_threads = absl::GetFlag(FLAGS_threads);
  addresses.reflection = absl::GetFlag(FLAGS_reflection);
  addresses.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  addresses.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  return addresses;
}

}  // namespace

absl::StatusOr<ServerSettings> ServerSettingsFromFlags() {
  ServerSettings settings;
  auto durability = DurabilityFromFlags();
  if (!durability.ok()) return durability.status();
  settings.durability = *std::move(durability);
  auto isolation = IsolationFromFlags();
  if (!isolation.ok()) return isolation.status();
  settings.isolation = *isolation;
  auto security = SecurityFromFlags();
  if (!security.ok()) return security.status();
  settings.security = *std::move(security);
  if (absl::Status s = CheckServingFlags(); !s.ok()) return s;
  auto replicated = ReplicationFromFlags();
  if (!replicated.ok()) return replicated.status();
  settings.replicated = *replicated;
  auto configured = ConfiguredModels(&settings.implicit_default_model);
  if (!configured.ok()) return configured.status();
  settings.configured_models = *std::move(configured);
  settings.addresses = AddressesFromFlags();
  settings.limits = LimitsFromFlags();
  // A model of --config is held to the bound CreateModel applies (issue 33,
  // N9): one over it stops the start, named, before anything is allocated.
  for (const ModelConfig& config : settings.configured_models) {
    if (absl::Status s = CheckModelFixedBytes(config, settings.limits); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--config: model \"", config.name, "\": ", s.message()));
    }
  }
  settings.max_models = absl::GetFlag(FLAGS_max_models);
  settings.snapshot_interval = absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_snapshot_interval));
  settings.snapshot_on_shutdown = absl::GetFlag(FLAGS_snapshot_on_shutdown);
  settings.shutdown_grace = std::chrono::seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  return settings;
}

}  // namespace clickd
