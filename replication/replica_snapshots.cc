// Replica: restoring from a snapshot at start, and taking, writing and
// publishing snapshots (replica.h describes the whole class).
#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/quote.h"
#include "replication/replica.h"
#include "replication/replica_snapshot.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

// Runs `read` again while it fails with UNAVAILABLE (NATS restarting or
// electing a leader), for at most `timeout`.
template <typename Read>
auto RetryWhileUnavailable(std::chrono::milliseconds timeout, Read read) -> decltype(read()) {
  const auto give_up = Clock::now() + timeout;
  for (;;) {
    auto result = read();
    if (!absl::IsUnavailable(result.status()) || Clock::now() >= give_up) return result;
    std::cerr << "clickd: waiting for NATS to restore the replica: " << result.status().message()
              << std::endl;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// --- Restoring -------------------------------------------------------------

absl::Status Replica::Restore(ReplicaStartReport* report) {
  std::optional<ReplicaSnapshot> chosen;
  report->source = "empty";
  if (!options_.data_dir.empty()) {
    auto local = LoadNewestLocalReplicaSnapshot(options_.env, options_.data_dir + "/replica");
    if (!local.ok()) return local.status();
    report->rejected = local->rejected;
    if (!local->path.empty()) {
      chosen = std::move(local->snapshot);
      report->source = absl::StrCat("local snapshot ", local->path);
    }
  }
  // The stream decides whether the local snapshot is enough: it must hold
  // every record after it. Without NATS a local snapshot is served as it is
  // and the applier catches up once NATS is back.
  // Without a local snapshot there is nothing to serve until NATS answers.
  auto stream = chosen.has_value() ? log_->State()
                                   : RetryWhileUnavailable(options_.restore_timeout,
                                                           [&] { return log_->State(); });
  if (!stream.ok()) {
    if (chosen.has_value()) {
      report->snapshot_sequence = chosen->sequence;
      report->models = chosen->models.size();
      return LoadSnapshot(*chosen);
    }
    return absl::UnavailableError(
        absl::StrCat("cannot start a replica with no local snapshot while NATS is unreachable: ",
                     stream.status().message()));
  }
  const uint64_t have = chosen.has_value() ? chosen->sequence : 0;
  if (stream->last_sequence < have) {
    return absl::FailedPreconditionError(
        absl::StrCat("the local snapshot contains stream sequence ", have, " but stream ",
                     log_->options().stream, " ends at ", stream->last_sequence,
                     ": the stream was deleted or replaced; move ", options_.data_dir,
                     "/replica aside to bootstrap from the stream"));
  }
  const bool purged_past = stream->first_sequence > have + 1;
  if (purged_past) {
    std::vector<std::string> rejected;
    auto published = RetryWhileUnavailable(options_.restore_timeout, [&] {
      rejected.clear();
      return snapshots_->FetchNewest(&rejected);
    });
    if (!published.ok()) return published.status();
    report->rejected.insert(report->rejected.end(), rejected.begin(), rejected.end());
    if (!published->has_value()) {
      return absl::DataLossError(absl::StrCat(
          "stream ", log_->options().stream, " starts at sequence ", stream->first_sequence,
          " and no snapshot was published: records 1..", stream->first_sequence - 1, " are gone"));
    }
    auto decoded = DecodeReplicaSnapshot((*published)->second);
    if (!decoded.ok()) {
      return absl::DataLossError(absl::StrCat("the published snapshot at sequence ",
                                              (*published)->first,
                                              " does not decode: ", decoded.status().message()));
    }
    if (decoded->sequence + 1 < stream->first_sequence) {
      return absl::DataLossError(absl::StrCat(
          "the newest published snapshot contains sequence ", decoded->sequence, " but stream ",
          log_->options().stream, " starts at ", stream->first_sequence, ": records ",
          decoded->sequence + 1, "..", stream->first_sequence - 1, " are gone"));
    }
    chosen = *std::move(decoded);
    report->source = "published snapshot";
  }
  if (!chosen.has_value()) {
    monitor_->Reset(0, LogDigest{});
    return absl::OkStatus();
  }
  report->snapshot_sequence = chosen->sequence;
  report->models = chosen->models.size();
  return LoadSnapshot(*chosen);
}

absl::Status Replica::LoadSnapshot(const ReplicaSnapshot& snapshot) {
  MutexLock apply(&apply_mu_);
  if (!snapshot.applied_ids.empty()) {
    auto ids = AppliedIds::Decode(snapshot.applied_ids, log_->options().duplicate_window);
    if (!ids.ok()) {
      return absl::DataLossError(absl::StrCat("the snapshot at sequence ", snapshot.sequence, ": ",
                                              ids.status().message()));
    }
    applied_ids_ = *std::move(ids);
  }
  MutexLock lock(&mu_);
  for (const ReplicaModel& m : snapshot.models) {
    auto served = registry_->Create(m.contents.config);
    if (!served.ok()) return served.status();
    absl::Status s = (*served)->model().ImportState(m.contents.state);
    // DecodeSnapshot has checked that a join buffer comes with a loop.
    if (s.ok() && (*served)->feedback() != nullptr && !m.contents.feedback.empty()) {
      s = (*served)->feedback()->RestoreState(m.contents.feedback);
    }
    if (s.ok() && !m.contents.calibration.empty()) {
      (*served)->RestoreCalibration(m.contents.calibration);
    }
    // The positions of a model's Kafka source (Replica::LearnAt).
    if (s.ok() && !m.contents.idempotency.empty()) {
      s = (*served)->RestoreIdempotency(m.contents.idempotency);
    }
    if (!s.ok()) {
      return absl::DataLossError(absl::StrCat("model ", Quote(m.contents.config.name),
                                              " in the snapshot at sequence ", snapshot.sequence,
                                              ": ", s.message()));
    }
    // GetModel reads the cached figures: those of the imported state, not
    // of the empty model (no batch may follow to refresh them).
    (*served)->StatsAfterImport();
    created_[m.contents.config.name] = m.created_sequence;
    versions_[m.contents.config.name] = snapshot.sequence;
  }
  applied_ = snapshot.sequence;
  stream_sequence_ = std::max(stream_sequence_, snapshot.sequence);
  monitor_->Reset(snapshot.sequence, snapshot.chain);
  return absl::OkStatus();
}

// --- Snapshots -------------------------------------------------------------

bool Replica::PublishDue() {
  auto published = snapshots_->List();
  if (!published.ok()) return false;
  const uint64_t newest = published->empty() ? 0 : published->front().sequence;
  {
    MutexLock lock(&mu_);
    published_snapshot_ = std::max(published_snapshot_, newest);
  }
  const auto now = Clock::now();
  if (newest != last_seen_published_) {
    // Another replica (or we) published since the last look: wait a whole
    // interval before publishing again.
    last_seen_published_ = newest;
    last_publish_check_ = now;
    return newest == 0;
  }
  return now - last_publish_check_ >= options_.snapshot_interval;
}

absl::StatusOr<ReplicaSnapshotReport> Replica::Snapshot(bool publish) {
  if (options_.read_only) publish = false;  // and so no purge either
  std::vector<std::shared_ptr<ServedModel>> models;
  absl::StatusOr<ReplicaSnapshotReport> report = SnapshotModels(publish, &models);
  // Each model's snapshot statistics (and metrics) follow the replica's
  // local snapshots, which hold every model.
  for (const std::shared_ptr<ServedModel>& served : models) {
    if (!report.ok()) {
      served->RecordSnapshot(report.status());
      continue;
    }
    SnapshotReport per_model;
    per_model.path = report->path;
    per_model.sequence = report->sequence;
    per_model.bytes = report->bytes;  // the one file that holds every model
    per_model.coordinates = served->CachedStats().coordinates;
    per_model.seconds = report->seconds;
    per_model.pause_seconds = report->pause_seconds;
    served->RecordSnapshot(per_model);
  }
  return report;
}

absl::StatusOr<ReplicaSnapshotReport> Replica::SnapshotModels(
    bool publish, std::vector<std::shared_ptr<ServedModel>>* models) {
  MutexLock one_at_a_time(&snapshot_mu_);
  const auto start = Clock::now();
  ReplicaSnapshot snapshot;
  std::vector<std::unique_ptr<Model::StateCopy>> copies;
  {
    // The applier is the only writer: pausing it makes the copy exactly
    // "every record up to applied_". Publishers and Predict go on.
    MutexLock pause(&apply_mu_);
    absl::flat_hash_map<std::string, uint64_t> created;
    {
      MutexLock lock(&mu_);
      snapshot.sequence = applied_;
      created = created_;
    }
    snapshot.chain = monitor_->chain();
    snapshot.applied_ids = applied_ids_.Encode();
    *models = registry_->List();
    for (const std::shared_ptr<ServedModel>& served : *models) {
      ReplicaModel m;
      m.created_sequence = created[served->name()];
      m.contents.config = served->model().config();
      m.contents.log_sequence = snapshot.sequence;
      // The join buffer is copied whole while the applier waits: it is
      // bounded by the model's feedback.max_buffer_bytes.
      if (const FeedbackLoop* loop = served->feedback(); loop != nullptr) {
        m.contents.feedback = loop->EncodeState();
      }
      // Fed by the applier (each record's progressive scores), so it is
      // the fit at this sequence, the same on every replica.
      m.contents.calibration = served->EncodeCalibration();
      // A Kafka source's positions, learned with its batches (LearnAt);
      // none for other models, whose bundles stay as they were.
      if (served->idempotency().size() > 0) m.contents.idempotency = served->idempotency().Encode();
      copies.push_back(served->model().BeginStateCopy());
      snapshot.models.push_back(std::move(m));
    }
  }
  ReplicaSnapshotReport report;
  report.pause_seconds = SecondsSince(start);
  // The applier goes on meanwhile; each copy is still its model at
  // snapshot.sequence (`models` keeps them alive).
  for (size_t i = 0; i < copies.size(); ++i) {
    snapshot.models[i].contents.state = copies[i]->Finish();
    copies[i].reset();
  }
  report.sequence = snapshot.sequence;
  for (const ReplicaModel& m : snapshot.models) {
    report.coordinates +=
        m.contents.state.coordinates.size() / (sizeof(uint64_t) + m.contents.state.state_size);
  }
  const std::string bytes = EncodeReplicaSnapshot(snapshot);
  report.bytes = bytes.size();
  if (!options_.data_dir.empty()) {
    const std::string dir = options_.data_dir + "/replica";
    if (absl::Status s = options_.env->CreateDirs(dir); !s.ok()) return s;
    report.path = dir + "/" + LocalReplicaSnapshotName(snapshot.sequence);
    if (absl::Status s = WriteLocalReplicaSnapshot(options_.env, dir, snapshot.sequence, bytes,
                                                   options_.keep_local_snapshots);
        !s.ok()) {
      return s;
    }
  }
  // A diverged replica's state is not one to bootstrap others from.
  if (publish && !monitor_->Report(Clock::now()).diverged) {
    if (absl::Status s =
            snapshots_->Publish(snapshot.sequence, bytes, options_.keep_published_snapshots);
        !s.ok()) {
      return s;
    }
    report.published = true;
    last_publish_check_ = Clock::now();
    last_seen_published_ = snapshot.sequence;
    // Retention (PurgePoint) reads the kept snapshots.
    auto published = snapshots_->List();
    if (!published.ok()) return published.status();
    {
      MutexLock lock(&mu_);
      if (!published->empty()) {
        published_snapshot_ = std::max(published_snapshot_, published->front().sequence);
      }
    }
    if (const uint64_t below = PurgePoint(*published); below > 1) {
      if (absl::Status s = log_->PurgeBelow(below); !s.ok()) return s;
    }
  }
  report.seconds = SecondsSince(start);
  return report;
}

uint64_t Replica::PurgePoint(const std::vector<SnapshotStore::Published>& published) const {
  if (published.size() < static_cast<size_t>(options_.keep_published_snapshots)) return 0;
  // Records leave the log only once the older kept published snapshot
  // contains them...
  uint64_t below = published.back().sequence + 1;
  // ...and never closer than retain_records to the newest, so that two
  // snapshots published moments apart leave a replica a little behind
  // something to catch up from...
  const uint64_t newest = published.front().sequence;
  below =
      std::min(below, newest + 1 > options_.retain_records ? newest + 1 - options_.retain_records
                                                           : uint64_t{1});
  // ...nor past what a live replica still has to apply.
  const DivergenceReport report = monitor_->Report(Clock::now());
  if (report.min_live_applied > 0) below = std::min(below, report.min_live_applied + 1);
  return below;
}

void Replica::SnapshotLoop() {
  if (options_.snapshot_interval.count() <= 0) return;
  uint64_t last_sequence = 0;
  {
    MutexLock lock(&snapshot_mu_);
    last_publish_check_ = Clock::now();
  }
  for (;;) {
    {
      MutexLock lock(&mu_);
      const auto deadline = Clock::now() + options_.snapshot_interval;
      while (!stopping_ && Clock::now() < deadline) {
        applied_cv_.WaitFor(&mu_, deadline - Clock::now());
      }
      if (stopping_) return;
      if (applied_ == last_sequence) continue;
    }
    bool publish;
    {
      MutexLock lock(&snapshot_mu_);
      publish = PublishDue();
    }
    auto report = Snapshot(publish);
    if (report.ok()) {
      last_sequence = report->sequence;
    } else {
      std::cerr << "clickd: replica snapshot failed: " << report.status().message() << std::endl;
    }
  }
}

}  // namespace clickd
