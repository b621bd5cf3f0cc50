#include "embedded/embedded_replica.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/base/quote.h"
#include "core/serving/registry.h"
#include "replication/jetstream_log.h"
#include "replication/nats_connection.h"
#include "replication/replica.h"
#include "replication/snapshot_store.h"
#include "server/predict_scoring.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

// How often the watcher looks whether applying stopped (a purge past this
// replica), and waits after a failed bootstrap before the next.
constexpr std::chrono::milliseconds kWatchInterval{500};
constexpr std::chrono::seconds kRetryBootstrap{5};

// Runs `open` again while it fails with UNAVAILABLE (NATS not up yet, or
// electing), until `deadline`.
template <typename Open>
auto RetryWhileUnavailable(Clock::time_point deadline, Open open) -> decltype(open()) {
  for (;;) {
    auto opened = open();
    if (!absl::IsUnavailable(opened.status()) || Clock::now() >= deadline) return opened;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// One restore from a published snapshot and the replica applying the log
// after it. The replica goes first: it applies into the registry.
struct Generation {
  std::unique_ptr<ModelRegistry> registry;
  std::unique_ptr<Replica> replica;
  uint64_t restored_sequence = 0;  // the snapshot's: applying starts after it
};

// What the metrics count besides the replicas' own status: Predict's
// outcomes and what earlier generations applied (docs/embedded.md#metrics).
struct Counts {
  // Predicts answered, in per-thread slots of their own cache line, so
  // that concurrent callers do not move one line between cores.
  static constexpr size_t kSlots = 16;
  struct alignas(64) Slot {
    std::atomic<uint64_t> value{0};
  };
  std::array<Slot, kSlots> answered;
  // Predicts refused, by gRPC status code (off the fast path).
  std::array<std::atomic<uint64_t>, 17> refused{};
  std::atomic<uint64_t> bootstrap_failures{0};
  // Of the generations replaced by a later bootstrap.
  std::atomic<uint64_t> retired_records{0};
  std::atomic<uint64_t> retired_rejected{0};
  std::atomic<uint64_t> retired_duplicates{0};

  void Answered() {
    static std::atomic<size_t> next{0};
    thread_local const size_t slot = next.fetch_add(1, std::memory_order_relaxed) % kSlots;
    answered[slot].value.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t answered_total() const {
    uint64_t total = 0;
    for (const Slot& s : answered) total += s.value.load(std::memory_order_relaxed);
    return total;
  }
  // Adds what `old`, replaced now, applied.
  void Retire(const Generation& old) {
    const ReplicaStatus status = old.replica->status();
    retired_records.fetch_add(
        status.applied_sequence - std::min(status.applied_sequence, old.restored_sequence),
        std::memory_order_relaxed);
    retired_rejected.fetch_add(status.rejected_records, std::memory_order_relaxed);
    retired_duplicates.fetch_add(status.duplicate_records, std::memory_order_relaxed);
  }
};

}  // namespace

// What a collectable handed to the host follows (MetricsCollectable): the
// replica until it is destroyed (the destructor clears it under mu, so it
// waits for a Collect in progress), then nothing.
struct EmbeddedReplica::MetricsLink {
  Mutex mu;
  const EmbeddedReplica* replica ABSL_GUARDED_BY(mu) = nullptr;
};

struct EmbeddedReplica::State {
  EmbeddedReplicaOptions options;
  std::unique_ptr<NatsConnection> nats;
  std::unique_ptr<JetStreamLog> log;
  std::unique_ptr<SnapshotStore> snapshots;
  std::string checkpoint_subject;

  mutable Mutex mu;
  CondVar stop_cv;
  std::shared_ptr<Generation> current ABSL_GUARDED_BY(mu);
  uint64_t bootstraps ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::thread watcher;
  Counts counts;
  std::shared_ptr<MetricsLink> metrics_link ABSL_GUARDED_BY(mu);

  std::shared_ptr<Generation> Current() const {
    MutexLock lock(&mu);
    return current;
  }

  // Restores every model from the newest published snapshot (or the log's
  // start) and starts applying after it.
  absl::StatusOr<std::shared_ptr<Generation>> Bootstrap() {
    auto generation = std::make_shared<Generation>();
    generation->registry = std::make_unique<ModelRegistry>();
    ReplicaOptions replica_options;
    replica_options.read_only = true;
    replica_options.replica_id = options.name;
    replica_options.publish_timeout = options.nats_timeout;
    replica_options.apply_timeout = options.max_version_wait;
    replica_options.snapshot_interval = std::chrono::milliseconds(0);
    // It compares its peers' checkpoints with its own log chain; digesting
    // every model's state (which pauses applying) is left to the servers.
    replica_options.checkpoint_subject = checkpoint_subject;
    replica_options.state_digest_records = 0;
    replica_options.restore_timeout = options.catch_up_timeout;
    ReplicaStartReport report;
    auto replica = Replica::Start(generation->registry.get(), log.get(), snapshots.get(),
                                  replica_options, &report);
    if (!replica.ok()) return replica.status();
    generation->replica = *std::move(replica);
    generation->restored_sequence = report.snapshot_sequence;
    if (absl::Status s = generation->replica->CatchUp(options.catch_up_timeout); !s.ok()) {
      std::cerr << "clickd embedded replica: serving before catching up with the log: "
                << s.message() << std::endl;
    }
    MutexLock lock(&mu);
    ++bootstraps;
    return generation;
  }

  // Bootstraps again whenever the log was purged past what was applied.
  void Watch() {
    for (;;) {
      {
        MutexLock lock(&mu);
        const auto until = Clock::now() + kWatchInterval;
        while (!stopping && Clock::now() < until) stop_cv.WaitFor(&mu, until - Clock::now());
        if (stopping) return;
      }
      std::shared_ptr<Generation> generation = Current();
      const absl::Status broken = generation->replica->status().broken;
      if (!absl::IsDataLoss(broken)) continue;
      std::cerr << "clickd embedded replica: " << broken.message()
                << "; restoring from the newest published snapshot" << std::endl;
      auto next = Bootstrap();
      if (!next.ok()) {
        std::cerr << "clickd embedded replica: bootstrap failed: " << next.status().message()
                  << std::endl;
        counts.bootstrap_failures.fetch_add(1, std::memory_order_relaxed);
        MutexLock lock(&mu);
        const auto until = Clock::now() + kRetryBootstrap;
        while (!stopping && Clock::now() < until) stop_cv.WaitFor(&mu, until - Clock::now());
        continue;
      }
      std::shared_ptr<Generation> old = *std::move(next);
      {
        MutexLock lock(&mu);
        counts.Retire(*current);  // with the swap: the metrics read both under mu
        std::swap(current, old);
      }
      // The old generation stops here, or when its last Predict returns.
    }
  }
};

absl::StatusOr<std::unique_ptr<EmbeddedReplica>> EmbeddedReplica::Open(
    EmbeddedReplicaOptions options) {
  if (options.nats_url.empty()) return absl::InvalidArgumentError("nats_url is empty");
  if (options.stream_prefix.empty()) return absl::InvalidArgumentError("stream_prefix is empty");
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  const EmbeddedReplicaOptions& o = state->options;
  const auto deadline = Clock::now() + o.catch_up_timeout;
  NatsConnectionOptions nats_options;
  nats_options.urls = o.nats_url;
  nats_options.creds_file = o.nats_creds;
  nats_options.name = o.name;
  nats_options.timeout = o.nats_timeout;
  nats_options.use_discovered_servers = o.use_discovered_servers;
  auto nats = NatsConnection::Connect(nats_options);
  if (!nats.ok()) return nats.status();
  state->nats = *std::move(nats);
  // The names clickd's --nats_stream gives (server/replication_setup.cc).
  const std::string subjects = absl::StrCat("clickd.", absl::AsciiStrToLower(o.stream_prefix));
  JetStreamLogOptions log_options;
  log_options.stream = o.stream_prefix + "_LOG";
  log_options.subject = subjects + ".log";
  log_options.create_if_missing = false;
  auto log = RetryWhileUnavailable(
      deadline, [&] { return JetStreamLog::Open(state->nats.get(), log_options); });
  if (!log.ok()) return log.status();
  state->log = *std::move(log);
  auto snapshots = RetryWhileUnavailable(deadline, [&] {
    return SnapshotStore::Open(state->nats->jetstream(), o.stream_prefix + "_SNAPSHOTS",
                               subjects + ".snapshots", /*replicas=*/1, o.nats_timeout,
                               /*create_if_missing=*/false);
  });
  if (!snapshots.ok()) return snapshots.status();
  state->snapshots = *std::move(snapshots);
  state->checkpoint_subject = subjects + ".checkpoints";
  auto first = state->Bootstrap();
  if (!first.ok()) return first.status();
  {
    MutexLock lock(&state->mu);
    state->current = *std::move(first);
  }
  state->watcher = std::thread([s = state.get()] { s->Watch(); });
  return std::unique_ptr<EmbeddedReplica>(new EmbeddedReplica(std::move(state)));
}

EmbeddedReplica::EmbeddedReplica(std::unique_ptr<State> state) : state_(std::move(state)) {}

EmbeddedReplica::~EmbeddedReplica() {
  DetachMetrics();
  {
    MutexLock lock(&state_->mu);
    state_->stopping = true;
    state_->stop_cv.SignalAll();
  }
  if (state_->watcher.joinable()) state_->watcher.join();
  // The replica stops before the log, the store and the connection it uses.
  std::shared_ptr<Generation> last;
  {
    MutexLock lock(&state_->mu);
    std::swap(last, state_->current);
  }
}

absl::Status EmbeddedReplica::PredictUncounted(const v1::PredictRequest& request,
                                               v1::PredictResponse* response) {
  if (request.log_impressions()) {
    return absl::FailedPreconditionError(
        "log_impressions: an embedded replica does not log impressions (they go through the "
        "replicated log): send this Predict to a clickd replica");
  }
  if (request.model().empty()) return absl::InvalidArgumentError("model is empty");
  std::shared_ptr<Generation> generation = state_->Current();
  std::shared_ptr<ServedModel> served = generation->registry->Get(request.model());
  if (served == nullptr) {
    return absl::NotFoundError(absl::StrCat("model ", Quote(request.model()), " not found"));
  }
  thread_local HashedCandidates hashed;
  absl::Cleanup release = [] { ReleaseLargeHashBuffers(&hashed); };
  ScoringModel scorer;
  if (absl::Status s = PlanPredict(*served, request, state_->options.limits, /*counted=*/nullptr,
                                   &hashed, &scorer);
      !s.ok()) {
    return s;
  }
  if (request.min_model_version() > 0) {
    if (absl::Status s = generation->replica->AwaitApplied(request.min_model_version(),
                                                           state_->options.max_version_wait);
        !s.ok()) {
      return s;
    }
  }
  const uint64_t version = generation->replica->applied_sequence();
  const std::vector<CandidateScore> scores = ScoreCandidates(*scorer.model, hashed);
  AnswerPredict(*served, scorer, request, hashed, scores, version, 0, response);
  return absl::OkStatus();
}

absl::StatusOr<std::string> EmbeddedReplica::StateDigest(const std::string& model) {
  return state_->Current()->replica->StateDigestOf(model);
}

uint64_t EmbeddedReplica::applied_version() const {
  return state_->Current()->replica->applied_sequence();
}

absl::Status EmbeddedReplica::WaitForVersion(uint64_t version, std::chrono::milliseconds timeout) {
  // In short waits, each on the current generation: one that stopped
  // applying is replaced by the watcher's next bootstrap meanwhile.
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    absl::Status s = state_->Current()->replica->AwaitApplied(
        version, std::clamp(left, std::chrono::milliseconds(0), kWatchInterval));
    if (s.ok()) return s;
    if (Clock::now() >= deadline) return absl::DeadlineExceededError(s.message());
  }
}

EmbeddedReplicaStats EmbeddedReplica::stats() const {
  std::shared_ptr<Generation> generation = state_->Current();
  const ReplicaStatus status = generation->replica->status();
  EmbeddedReplicaStats out;
  out.applied_version = status.applied_sequence;
  out.stream_sequence = status.stream_sequence;
  out.lag_seconds = status.lag_seconds;
  out.nats_connected = state_->nats->connected();
  out.models = generation->registry->size();
  out.broken = std::string(status.broken.message());
  MutexLock lock(&state_->mu);
  out.bootstraps = state_->bootstraps;
  return out;
}

// --- Metrics ----------------------------------------------------------------

namespace {

class FunctionCollectable final : public prometheus::Collectable {
 public:
  using Function = std::function<std::vector<prometheus::MetricFamily>()>;
  explicit FunctionCollectable(Function collect) : collect_(std::move(collect)) {}
  std::vector<prometheus::MetricFamily> Collect() const override { return collect_(); }

 private:
  const Function collect_;
};

// Builds the families of one scrape, each series labelled with the stream.
class Families {
 public:
  explicit Families(std::string stream) : stream_(std::move(stream)) {}

  void Add(const char* name, const char* help, prometheus::MetricType type, double value,
           std::vector<prometheus::ClientMetric::Label> labels = {}) {
    prometheus::MetricFamily* family = Family(name, help, type);
    prometheus::ClientMetric metric;
    labels.push_back({"stream", stream_});
    std::sort(labels.begin(), labels.end());
    metric.label = std::move(labels);
    if (type == prometheus::MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family->metric.push_back(std::move(metric));
  }
  // A family that may have no series (per model): its HELP and TYPE still.
  void Declare(const char* name, const char* help, prometheus::MetricType type) {
    Family(name, help, type);
  }
  std::vector<prometheus::MetricFamily> Take() { return std::move(families_); }

 private:
  prometheus::MetricFamily* Family(const char* name, const char* help,
                                   prometheus::MetricType type) {
    for (prometheus::MetricFamily& f : families_) {
      if (f.name == name) return &f;
    }
    families_.push_back({name, help, type, {}});
    return &families_.back();
  }

  const std::string stream_;
  std::vector<prometheus::MetricFamily> families_;
};

}  // namespace

std::vector<prometheus::MetricFamily> EmbeddedReplica::CollectMetrics() const {
  using prometheus::MetricType;
  const Counts& counts = state_->counts;
  std::shared_ptr<Generation> generation;
  uint64_t bootstraps = 0, retired_records = 0, retired_rejected = 0, retired_duplicates = 0;
  {
    MutexLock lock(&state_->mu);
    generation = state_->current;
    bootstraps = state_->bootstraps;
    retired_records = counts.retired_records.load(std::memory_order_relaxed);
    retired_rejected = counts.retired_rejected.load(std::memory_order_relaxed);
    retired_duplicates = counts.retired_duplicates.load(std::memory_order_relaxed);
  }
  Families out(state_->options.stream_prefix);
  if (generation == nullptr) return out.Take();
  const ReplicaStatus status = generation->replica->status();
  const auto d = [](uint64_t v) { return static_cast<double>(v); };
  out.Add("clickd_embedded_applied_sequence",
          "The last replicated-log sequence this embedded replica applied (its model_version).",
          MetricType::Gauge, d(status.applied_sequence));
  out.Add("clickd_embedded_stream_sequence",
          "The newest replicated-log sequence this embedded replica knows exists.",
          MetricType::Gauge, d(status.stream_sequence));
  out.Add("clickd_embedded_lag_records", "Records in the replicated log not yet applied here.",
          MetricType::Gauge, d(status.stream_sequence - status.applied_sequence));
  out.Add("clickd_embedded_lag_seconds",
          "How old the newest applied record is while records are waiting (0 when caught up).",
          MetricType::Gauge, status.lag_seconds);
  out.Add("clickd_embedded_records_applied_total",
          "Log records this embedded replica applied after the snapshots it restored from.",
          MetricType::Counter,
          d(retired_records + status.applied_sequence -
            std::min(status.applied_sequence, generation->restored_sequence)));
  out.Add("clickd_embedded_rejected_records_total", "Damaged log records skipped.",
          MetricType::Counter, d(retired_rejected + status.rejected_records));
  out.Add("clickd_embedded_duplicate_records_total",
          "Log records skipped because their message id was applied within the duplicate "
          "window.",
          MetricType::Counter, d(retired_duplicates + status.duplicate_records));
  out.Add("clickd_embedded_broken",
          "1 while applying has stopped (a purge past this replica) until it restores again.",
          MetricType::Gauge, status.broken.ok() ? 0 : 1);
  out.Add("clickd_embedded_bootstraps_total",
          "Restores from the newest published snapshot, the first included.", MetricType::Counter,
          d(bootstraps));
  out.Add("clickd_embedded_bootstrap_failures_total",
          "Restores after a purge that failed (retried every 5 s).", MetricType::Counter,
          d(counts.bootstrap_failures.load(std::memory_order_relaxed)));
  out.Add("clickd_embedded_nats_connected", "1 while the NATS connection is up.", MetricType::Gauge,
          state_->nats->connected() ? 1 : 0);
  const std::vector<std::shared_ptr<ServedModel>> models = generation->registry->List();
  out.Add("clickd_embedded_models", "Models this embedded replica holds.", MetricType::Gauge,
          d(models.size()));
  const char* kVersion = "clickd_embedded_model_version";
  const char* kVersionHelp = "The replicated-log sequence of the last record applied to the model.";
  const char* kCoordinates = "clickd_embedded_model_coordinates";
  const char* kCoordinatesHelp = "Coordinates (hashed feature keys) the model holds.";
  const char* kBytes = "clickd_embedded_model_bytes";
  const char* kBytesHelp = "Memory of the model's coordinate store, in bytes.";
  const char* kPredictions = "clickd_embedded_predictions_total";
  const char* kPredictionsHelp =
      "Candidates this embedded replica scored for Predict, per model (from 0 at each restore).";
  out.Declare(kVersion, kVersionHelp, MetricType::Gauge);
  out.Declare(kCoordinates, kCoordinatesHelp, MetricType::Gauge);
  out.Declare(kBytes, kBytesHelp, MetricType::Gauge);
  out.Declare(kPredictions, kPredictionsHelp, MetricType::Counter);
  for (const std::shared_ptr<ServedModel>& served : models) {
    const ModelStats stats = served->CachedStats();
    const std::vector<prometheus::ClientMetric::Label> model = {{"model", served->name()}};
    out.Add(kVersion, kVersionHelp, MetricType::Gauge,
            d(generation->replica->model_version(served->name())), model);
    out.Add(kCoordinates, kCoordinatesHelp, MetricType::Gauge, d(stats.coordinates), model);
    out.Add(kBytes, kBytesHelp, MetricType::Gauge, d(stats.bytes), model);
    out.Add(kPredictions, kPredictionsHelp, MetricType::Counter, d(served->predictions()), model);
  }
  const char* kCalls = "clickd_embedded_predict_calls_total";
  const char* kCallsHelp = "Predict calls this embedded replica answered, by gRPC status code.";
  out.Add(kCalls, kCallsHelp, MetricType::Counter, d(counts.answered_total()), {{"code", "OK"}});
  for (size_t code = 1; code < counts.refused.size(); ++code) {
    const uint64_t refused = counts.refused[code].load(std::memory_order_relaxed);
    if (refused == 0) continue;
    out.Add(kCalls, kCallsHelp, MetricType::Counter, d(refused),
            {{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
  }
  return out.Take();
}

std::string EmbeddedReplica::MetricsText() const {
  return prometheus::TextSerializer().Serialize(CollectMetrics());
}

std::shared_ptr<prometheus::Collectable> EmbeddedReplica::MetricsCollectable() {
  std::shared_ptr<MetricsLink> link;
  {
    MutexLock lock(&state_->mu);
    if (state_->metrics_link == nullptr) state_->metrics_link = std::make_shared<MetricsLink>();
    link = state_->metrics_link;
  }
  {
    MutexLock lock(&link->mu);
    link->replica = this;
  }
  return std::make_shared<FunctionCollectable>([link] {
    MutexLock lock(&link->mu);
    return link->replica == nullptr ? std::vector<prometheus::MetricFamily>()
                                    : link->replica->CollectMetrics();
  });
}

void EmbeddedReplica::DetachMetrics() {
  std::shared_ptr<MetricsLink> link;
  {
    MutexLock lock(&state_->mu);
    link = state_->metrics_link;
  }
  if (link == nullptr) return;
  MutexLock lock(&link->mu);
  link->replica = nullptr;
}

absl::Status EmbeddedReplica::Predict(const v1::PredictRequest& request,
                                      v1::PredictResponse* response) {
  absl::Status status = PredictUncounted(request, response);
  if (status.ok()) {
    state_->counts.Answered();
  } else {
    const size_t code = static_cast<size_t>(status.code());
    if (code < state_->counts.refused.size()) {
      state_->counts.refused[code].fetch_add(1, std::memory_order_relaxed);
    }
  }
  return status;
}

}  // namespace clickd
