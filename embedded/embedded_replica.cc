#include "embedded/embedded_replica.h"

#include <algorithm>
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
};

}  // namespace

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
        MutexLock lock(&mu);
        const auto until = Clock::now() + kRetryBootstrap;
        while (!stopping && Clock::now() < until) stop_cv.WaitFor(&mu, until - Clock::now());
        continue;
      }
      std::shared_ptr<Generation> old = *std::move(next);
      {
        MutexLock lock(&mu);
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

absl::Status EmbeddedReplica::Predict(const v1::PredictRequest& request,
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

}  // namespace clickd
