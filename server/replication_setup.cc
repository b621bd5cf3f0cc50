#include "server/replication_setup.h"

#include <unistd.h>

#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "replication/nats_server_version.h"
#include "server/flag_checks.h"

ABSL_FLAG(std::string, replication, "none",
          "none: each process is its own model (the embedded file log in --data_dir); "
          "jetstream: every replica applies one NATS JetStream stream (docs/replication.md)");
ABSL_FLAG(std::string, nats_url, "",
          "with --replication=jetstream: comma-separated NATS server URLs "
          "(nats://host:4222,...)");
ABSL_FLAG(std::string, nats_creds, "", "a NATS credentials file (JWT and NKey seed); empty: none");
ABSL_FLAG(std::string, nats_stream, "CLICKD",
          "stream-name prefix: the log is <prefix>_LOG, published snapshots <prefix>_SNAPSHOTS");
ABSL_FLAG(int, nats_replicas, 3,
          "replication factor of the streams clickd creates (an existing stream is used as is)");
ABSL_FLAG(std::string, replica_id, "",
          "this replica's name in message ids and logs (empty: the host name)");
ABSL_FLAG(absl::Duration, nats_publish_timeout, absl::Seconds(2),
          "how long an Update waits for JetStream to acknowledge its record");
ABSL_FLAG(absl::Duration, replication_apply_timeout, absl::Seconds(5),
          "how long an Update waits, once acknowledged, for this replica to apply it");
ABSL_FLAG(absl::Duration, max_version_wait, absl::Seconds(1),
          "how long a Predict with min_model_version waits for this replica to reach it");
ABSL_FLAG(absl::Duration, catch_up_timeout, absl::Minutes(2),
          "at start, how long to apply the stream before serving (serving starts anyway after); "
          "also how long reading the stream and the published snapshots is retried while NATS "
          "is unavailable");
ABSL_FLAG(absl::Duration, replication_checkpoint_interval, absl::Seconds(1),
          "how often a replica publishes its checkpoint (applied sequence, log chain, state "
          "digest) for the others to compare (docs/replication.md#divergence)");
ABSL_FLAG(uint64_t, replication_state_digest_records, 10000,
          "a replica digests every model's state after each sequence that is a multiple of "
          "this, for the others to compare (reads every coordinate while applying waits; 0: "
          "never, the log chain is still compared)");
ABSL_FLAG(uint64_t, replication_retain_records, 10000,
          "records the log keeps below the newest published snapshot, besides what the older "
          "kept snapshot and live replicas need (so a replica a little behind can catch up)");
ABSL_FLAG(std::string, nats_min_server_version, "2.15.0",
          "refuse to start against a nats-server older than this (docs/replication.md says why; "
          "empty: no check)");

namespace clickd {
namespace {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "clickd";
  return name;
}

absl::Status CheckDuration(const char* flag, absl::Duration value, absl::Duration max) {
  if (value <= absl::ZeroDuration() || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", absl::FormatDuration(value),
                                                   " must be in (0, ", absl::FormatDuration(max),
                                                   "]"));
  }
  return absl::OkStatus();
}

void RegisterReplicationMetrics(metrics::Registry* registry, const ModelRegistry* models,
                                Replica* replica, NatsConnection* nats) {
  using metrics::MetricType;
  registry->BuildCallback(
      "clickd_model_version",
      "The replicated-log sequence of the last record applied to the model.", MetricType::kGauge,
      [models, replica] {
        std::vector<metrics::Sample> out;
        for (const auto& served : models->List()) {
          out.push_back({{{"model", served->name()}},
                         static_cast<double>(replica->model_version(served->name()))});
        }
        return out;
      });
  auto gauge = [&](const char* name, const char* help, auto value) {
    registry->BuildCallback(name, help, MetricType::kGauge, [replica, value] {
      return std::vector<metrics::Sample>{{{}, static_cast<double>(value(replica->status()))}};
    });
  };
  gauge("clickd_replication_applied_sequence",
        "The last replicated-log sequence this replica applied.",
        [](const ReplicaStatus& s) { return s.applied_sequence; });
  gauge("clickd_replication_stream_sequence",
        "The newest replicated-log sequence this replica knows exists.",
        [](const ReplicaStatus& s) { return s.stream_sequence; });
  gauge("clickd_replication_lag_records", "Records in the replicated log not yet applied here.",
        [](const ReplicaStatus& s) { return s.stream_sequence - s.applied_sequence; });
  gauge("clickd_replication_lag_seconds",
        "How old the newest applied record is while records are waiting (0 when caught up).",
        [](const ReplicaStatus& s) { return s.lag_seconds; });
  gauge("clickd_replication_published_snapshot_sequence",
        "Sequence of the newest snapshot published to the stream that this replica has seen.",
        [](const ReplicaStatus& s) { return s.published_snapshot_sequence; });
  gauge("clickd_replication_broken",
        "1 if this replica stopped applying the log (see its log; restart it to bootstrap).",
        [](const ReplicaStatus& s) { return s.broken.ok() ? 0 : 1; });
  gauge("clickd_replication_diverged",
        "1 if this replica's copy of the log or models differs from its peers' (it refuses "
        "writes; docs/replication.md#divergence).",
        [](const ReplicaStatus& s) { return s.divergence.diverged ? 1 : 0; });
  gauge("clickd_replication_peers_disagreeing",
        "Live replicas whose last checkpoint differed from this replica's at the same sequence.",
        [](const ReplicaStatus& s) { return s.divergence.peers_disagreeing; });
  gauge("clickd_replication_peers_agreeing",
        "Live replicas whose last checkpoint equalled this replica's at the same sequence.",
        [](const ReplicaStatus& s) { return s.divergence.peers_agreeing; });
  gauge("clickd_replication_min_live_applied_sequence",
        "The lowest sequence applied by this replica and its live healthy peers: retention "
        "keeps the log above it.",
        [](const ReplicaStatus& s) { return s.divergence.min_live_applied; });
  registry->BuildCallback(
      "clickd_replication_checkpoint_comparisons_total",
      "Peer checkpoints compared with this replica's at equal sequences.", MetricType::kCounter,
      [replica] {
        return std::vector<metrics::Sample>{
            {{}, static_cast<double>(replica->status().divergence.comparisons)}};
      });
  registry->BuildCallback(
      "clickd_replication_checkpoint_mismatches_total",
      "Peer checkpoints that differed from this replica's at the same sequence.",
      MetricType::kCounter, [replica] {
        return std::vector<metrics::Sample>{
            {{}, static_cast<double>(replica->status().divergence.mismatches)}};
      });
  registry->BuildCallback(
      "clickd_replication_duplicate_records_total",
      "Records skipped because their message id was applied within the duplicate window (the "
      "stream stored a retry twice).",
      MetricType::kCounter, [replica] {
        return std::vector<metrics::Sample>{
            {{}, static_cast<double>(replica->status().duplicate_records)}};
      });
  registry->BuildCallback("clickd_replication_rejected_records_total",
                          "Damaged records every replica skipped.", MetricType::kCounter,
                          [replica] {
                            return std::vector<metrics::Sample>{
                                {{}, static_cast<double>(replica->status().rejected_records)}};
                          });
  registry->BuildCallback(
      "clickd_nats_connected", "1 while the NATS connection is up.", MetricType::kGauge, [nats] {
        return std::vector<metrics::Sample>{{{}, nats->connected() ? 1.0 : 0.0}};
      });
}

}  // namespace

absl::StatusOr<bool> ReplicationFromFlags() {
  const std::string mode = absl::GetFlag(FLAGS_replication);
  if (mode == "none") {
    if (!absl::GetFlag(FLAGS_nats_url).empty()) {
      return absl::InvalidArgumentError("--nats_url needs --replication=jetstream");
    }
    return false;
  }
  if (mode != "jetstream") {
    return absl::InvalidArgumentError(
        absl::StrCat("--replication=", mode, " is not one of none, jetstream"));
  }
  if (absl::GetFlag(FLAGS_nats_url).empty()) {
    return absl::InvalidArgumentError("--replication=jetstream needs --nats_url");
  }
  const int replicas = absl::GetFlag(FLAGS_nats_replicas);
  if (absl::Status s = CheckFlagRange("nats_replicas", int64_t{replicas}, 1, 5); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(s.message(), " (JetStream's limit)"));
  }
  const std::string stream = absl::GetFlag(FLAGS_nats_stream);
  if (stream.empty() || stream.size() > 32 ||
      !std::all_of(stream.begin(), stream.end(),
                   [](char c) { return absl::ascii_isalnum(c) || c == '_' || c == '-'; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats_stream=", stream, " must be 1 to 32 letters, digits, '_' or '-'"));
  }
  for (auto [flag, value, max] :
       {std::tuple("nats_publish_timeout", absl::GetFlag(FLAGS_nats_publish_timeout),
                   absl::Minutes(1)),
        std::tuple("replication_apply_timeout", absl::GetFlag(FLAGS_replication_apply_timeout),
                   absl::Minutes(10)),
        std::tuple("max_version_wait", absl::GetFlag(FLAGS_max_version_wait), absl::Minutes(1)),
        std::tuple("catch_up_timeout", absl::GetFlag(FLAGS_catch_up_timeout), absl::Hours(24))}) {
    if (absl::Status s = CheckDuration(flag, value, max); !s.ok()) return s;
  }
  if (absl::Status s =
          CheckDuration("replication_checkpoint_interval",
                        absl::GetFlag(FLAGS_replication_checkpoint_interval), absl::Minutes(1));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFlagRange("replication_state_digest_records",
                                      absl::GetFlag(FLAGS_replication_state_digest_records),
                                      uint64_t{0}, uint64_t{1} << 40);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFlagRange("replication_retain_records",
                                      absl::GetFlag(FLAGS_replication_retain_records), uint64_t{0},
                                      uint64_t{1} << 40);
      !s.ok()) {
    return s;
  }
  if (const std::string v = absl::GetFlag(FLAGS_nats_min_server_version);
      !v.empty() && !ParseServerVersion(v).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats_min_server_version=", v, " is not a version like 2.15.0"));
  }
  return true;
}

namespace {

// The stream-name prefix's streams and subjects (docs/replication.md#flags).
struct StreamNames {
  std::string log_stream, log_subject, snapshot_stream, snapshot_subjects, checkpoint_subject;
};

StreamNames StreamNamesFromFlags() {
  const std::string prefix = absl::GetFlag(FLAGS_nats_stream);
  const std::string subjects = absl::StrCat("clickd.", absl::AsciiStrToLower(prefix));
  return {prefix + "_LOG", subjects + ".log", prefix + "_SNAPSHOTS", subjects + ".snapshots",
          subjects + ".checkpoints"};
}

// Runs `open` (a StatusOr) again while it fails with UNAVAILABLE, until
// --catch_up_timeout has passed: NATS may not be up yet (a whole cluster
// restarting), or may still be electing its JetStream leader, when a
// stream is looked up or created. Any other error (a stream that cannot be
// created as configured, such as one whose subjects another stream owns)
// is returned at once: waiting would not change it.
template <typename Open>
auto KeepTrying(Open open) -> decltype(open()) {
  const auto give_up = std::chrono::steady_clock::now() +
                       absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_catch_up_timeout));
  for (;;) {
    auto opened = open();
    if (!absl::IsUnavailable(opened.status()) || std::chrono::steady_clock::now() > give_up) {
      return opened;
    }
    std::cerr << "clickd: waiting for NATS: " << opened.status().message() << std::endl;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// Opens the log stream, creating it if needed (KeepTrying).
absl::StatusOr<std::unique_ptr<JetStreamLog>> OpenLog(NatsConnection* nats,
                                                      const StreamNames& names) {
  JetStreamLogOptions options;
  options.stream = names.log_stream;
  options.subject = names.log_subject;
  options.replicas = absl::GetFlag(FLAGS_nats_replicas);
  return KeepTrying([&] { return JetStreamLog::Open(nats, options); });
}

// Counts every publish in the publish latency histogram or the failures.
std::function<void(double, bool)> PublishObserver(metrics::Registry* metrics) {
  auto& publish_seconds = metrics->BuildHistogram(
      "clickd_replication_publish_seconds",
      "Time from publishing a record to JetStream's acknowledgement (acknowledged ones).");
  auto& publish_failures = metrics->BuildCounter(
      "clickd_replication_publish_failures_total",
      "Records JetStream did not acknowledge in time (the caller got UNAVAILABLE).");
  auto* latency = &publish_seconds.Add(
      {}, metrics::Histogram::BucketBoundaries{0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                               0.05, 0.1, 0.2, 0.5, 1, 2, 5});
  auto* failures = &publish_failures.Add({});
  return [latency, failures](double seconds, bool acknowledged) {
    if (acknowledged) {
      latency->Observe(seconds);
    } else {
      failures->Increment();
    }
  };
}

// Says how the replica was restored, then applies the stream as far as it
// reaches now (bounded by --catch_up_timeout; serving starts anyway after).
void ReportAndCatchUp(const Replication& replication, const ModelRegistry& registry,
                      const std::string& replica_id, const ReplicaStartReport& report) {
  for (const std::string& reason : report.rejected) {
    std::cout << "clickd: skipped a damaged replica snapshot: " << reason << std::endl;
  }
  std::cout << "clickd: replica " << replica_id << " restored " << registry.size()
            << " model(s) from " << report.source << " at sequence " << report.snapshot_sequence
            << " in " << report.seconds << " s; applying " << replication.log->options().stream
            << std::endl;
  const auto catch_up = absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_catch_up_timeout));
  if (absl::Status s = replication.replica->CatchUp(catch_up); !s.ok()) {
    std::cerr << "clickd: serving before catching up with the stream: " << s.message() << std::endl;
  } else {
    std::cout << "clickd: caught up with the stream at sequence "
              << replication.replica->applied_sequence() << std::endl;
  }
}

// Creates, through the stream, the configured models the stream does not
// have yet. A fresh cluster can time out the first publishes while it
// places the stream's replicas, so an UNAVAILABLE create is retried
// (KeepTrying); a retry that follows a create the stream did store only
// adds a record every replica refuses as "already exists".
void CreateConfiguredModels(Replica* replica, const ModelRegistry& registry,
                            const std::vector<ModelConfig>& configured) {
  for (const ModelConfig& config : configured) {
    if (registry.Get(config.name) != nullptr) continue;
    auto created = KeepTrying([&] { return replica->Create(config); });
    // Another replica starting with the same config may have won the race.
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
      std::cerr << "clickd: could not create configured model \"" << config.name
                << "\" through the stream (it will be created at the next start): "
                << created.status().message() << std::endl;
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Replication>> StartReplication(
    ModelRegistry* registry, const std::string& data_dir,
    std::chrono::milliseconds snapshot_interval, const std::vector<ModelConfig>& configured,
    metrics::Registry* metrics) {
  auto out = std::make_unique<Replication>();
  std::string replica_id = absl::GetFlag(FLAGS_replica_id);
  if (replica_id.empty()) replica_id = HostName();

  NatsConnectionOptions nats_options;
  nats_options.urls = absl::GetFlag(FLAGS_nats_url);
  nats_options.creds_file = absl::GetFlag(FLAGS_nats_creds);
  nats_options.name = absl::StrCat("clickd ", replica_id);
  nats_options.timeout = absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_nats_publish_timeout));
  if (absl::Status s =
          CheckServerVersions(nats_options.urls, absl::GetFlag(FLAGS_nats_min_server_version));
      !s.ok()) {
    return s;
  }
  auto nats = NatsConnection::Connect(nats_options);
  if (!nats.ok()) return nats.status();
  out->nats = *std::move(nats);

  const StreamNames names = StreamNamesFromFlags();
  auto log = OpenLog(out->nats.get(), names);
  if (!log.ok()) return log.status();
  out->log = *std::move(log);
  // Its stream too (KeepTrying): created right after the log's, it can
  // time out while a fresh cluster places its replicas.
  auto snapshots = KeepTrying([&] {
    return SnapshotStore::Open(out->nats->jetstream(), names.snapshot_stream,
                               names.snapshot_subjects, absl::GetFlag(FLAGS_nats_replicas),
                               out->nats->timeout());
  });
  if (!snapshots.ok()) return snapshots.status();
  out->snapshots = *std::move(snapshots);

  ReplicaOptions options;
  options.data_dir = data_dir;
  options.replica_id = replica_id;
  options.publish_timeout = out->nats->timeout();
  options.apply_timeout =
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_replication_apply_timeout));
  options.snapshot_interval = snapshot_interval;
  options.on_publish = PublishObserver(metrics);
  options.checkpoint_subject = names.checkpoint_subject;
  options.checkpoint_interval =
      absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_replication_checkpoint_interval));
  options.state_digest_records = absl::GetFlag(FLAGS_replication_state_digest_records);
  options.retain_records = absl::GetFlag(FLAGS_replication_retain_records);
  options.restore_timeout = absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_catch_up_timeout));
  ReplicaStartReport report;
  auto replica = Replica::Start(registry, out->log.get(), out->snapshots.get(), options, &report);
  if (!replica.ok()) return replica.status();
  out->replica = *std::move(replica);
  ReportAndCatchUp(*out, *registry, replica_id, report);
  CreateConfiguredModels(out->replica.get(), *registry, configured);
  out->writer = std::make_unique<ReplicatedModelWriter>(
      out->replica.get(), absl::ToChronoMilliseconds(absl::GetFlag(FLAGS_max_version_wait)));
  RegisterReplicationMetrics(metrics, registry, out->replica.get(), out->nats.get());
  return out;
}

}  // namespace clickd
