#include "replication/replica.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "core/base/quote.h"
#include "core/persist/batch_codec.h"
#include "core/persist/snapshot.h"
#include "replication/log_record.h"
#include "replication/replica_snapshot.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How long the applier waits for a message before it looks around (lag,
// stop requests).
constexpr std::chrono::milliseconds kPoll{200};
// How long a reader may deliver nothing while the stream holds records
// after ours before it is replaced.
constexpr double kStalled = 2.0;

}  // namespace

// One publisher waiting for its record to be applied here.
struct Replica::Waiter {
  bool done = false;
  absl::Status status;
  uint64_t sequence = 0;
  std::vector<ScoredExample> scored;
  std::shared_ptr<ServedModel> created;
};

Replica::Replica(ModelRegistry* registry, JetStreamLog* log, SnapshotStore* snapshots,
                 ReplicaOptions options)
    : registry_(registry),
      log_(log),
      snapshots_(snapshots),
      options_(std::move(options)),
      id_prefix_(absl::StrCat(options_.replica_id, "-", UnixNanos())) {}

absl::StatusOr<std::unique_ptr<Replica>> Replica::Start(ModelRegistry* registry, JetStreamLog* log,
                                                        SnapshotStore* snapshots,
                                                        ReplicaOptions options,
                                                        ReplicaStartReport* report) {
  if (registry->durable() || registry->size() != 0) {
    return absl::FailedPreconditionError(
        "a replica needs an empty memory-only registry: it is the models' durability");
  }
  std::unique_ptr<Replica> replica(new Replica(registry, log, snapshots, std::move(options)));
  const auto start = Clock::now();
  if (absl::Status s = replica->Restore(report); !s.ok()) return s;
  report->seconds = SecondsSince(start);
  replica->applier_ = std::thread([r = replica.get()] { r->ApplyLoop(); });
  replica->snapshotter_ = std::thread([r = replica.get()] { r->SnapshotLoop(); });
  return replica;
}

Replica::~Replica() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, waiter] : waiters_) {
      waiter->done = true;
      waiter->status = absl::UnavailableError("the replica is shutting down");
    }
    applied_cv_.SignalAll();
  }
  if (applier_.joinable()) applier_.join();
  if (snapshotter_.joinable()) snapshotter_.join();
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
  auto stream = log_->State();
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
    auto published = snapshots_->FetchNewest(&rejected);
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
  if (!chosen.has_value()) return absl::OkStatus();
  report->snapshot_sequence = chosen->sequence;
  report->models = chosen->models.size();
  return LoadSnapshot(*chosen);
}

absl::Status Replica::LoadSnapshot(const ReplicaSnapshot& snapshot) {
  MutexLock lock(&mu_);
  for (const ReplicaModel& m : snapshot.models) {
    auto served = registry_->Create(m.contents.config);
    if (!served.ok()) return served.status();
    if (absl::Status s = (*served)->model().ImportState(m.contents.state); !s.ok()) {
      return absl::DataLossError(absl::StrCat("model ", Quote(m.contents.config.name),
                                              " in the snapshot at sequence ", snapshot.sequence,
                                              ": ", s.message()));
    }
    created_[m.contents.config.name] = m.created_sequence;
    versions_[m.contents.config.name] = snapshot.sequence;
  }
  applied_ = snapshot.sequence;
  stream_sequence_ = std::max(stream_sequence_, snapshot.sequence);
  return absl::OkStatus();
}

// --- Applying --------------------------------------------------------------

void Replica::ApplyLoop() {
  std::unique_ptr<JetStreamLog::Reader> reader;
  auto last_state = Clock::now() - std::chrono::hours(1);
  auto last_message = Clock::now();  // or the reader's start
  for (;;) {
    uint64_t next;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      if (!broken_.ok()) {
        applied_cv_.WaitFor(&mu_, std::chrono::seconds(1));
        continue;
      }
      next = applied_ + 1;
    }
    if (reader == nullptr) {
      auto opened = log_->ReadFrom(next);
      if (!opened.ok()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        continue;
      }
      reader = *std::move(opened);
      last_message = Clock::now();
    }
    auto message = reader->Next(kPoll);
    if (!message.ok()) {
      reader.reset();
      continue;
    }
    if (!message->has_value()) {
      // Idle: learn how far the stream goes, at most once a second.
      if (SecondsSince(last_state) >= 1) {
        last_state = Clock::now();
        bool stalled = false;
        if (auto state = log_->State(); state.ok()) {
          MutexLock lock(&mu_);
          stream_sequence_ = std::max(stream_sequence_, state->last_sequence);
          // The stream holds records we have not got, and nothing came for
          // a while: the consumer did not survive (all NATS nodes
          // restarted, say). Read again from the next sequence.
          stalled = state->last_sequence > applied_ && SecondsSince(last_message) >= kStalled;
          if (state->first_sequence > applied_ + 1) {
            broken_ = absl::DataLossError(absl::StrCat(
                "stream ", log_->options().stream, " was purged up to sequence ",
                state->first_sequence - 1, " while this replica had applied only ", applied_,
                ": restart it to bootstrap from the newest published snapshot"));
            std::cerr << "clickd: replication stopped: " << broken_.message() << std::endl;
          }
        }
        if (stalled) reader.reset();
      }
      continue;
    }
    last_message = Clock::now();
    const LogMessage& m = ***message;
    if (m.sequence() < next) continue;  // already applied (a redelivery)
    if (m.sequence() > next) {
      // A gap: start reading again at `next`; if the stream no longer
      // holds it, the idle check above reports it.
      reader.reset();
      continue;
    }
    MutexLock apply(&apply_mu_);
    Apply(m);
  }
}

void Replica::Apply(const LogMessage& message) {
  const uint64_t sequence = message.sequence();
  absl::Status status;
  std::vector<ScoredExample> scored;
  std::shared_ptr<ServedModel> created;
  std::string model;
  auto record = DecodeLogRecord(message.data());
  if (!record.ok()) {
    // Every replica skips the same record: they stay equal. It is counted
    // and logged, and its publisher (if waiting here) gets the error.
    status = absl::DataLossError(
        absl::StrCat("stream record ", sequence, " is damaged: ", record.status().message()));
    std::cerr << "clickd: " << status.message() << std::endl;
  } else {
    model = record->model;
    switch (record->kind) {
      case LogRecord::Kind::kCreate: {
        auto config = DecodeModelConfig(record->payload);
        if (!config.ok()) {
          status = config.status();
          break;
        }
        auto served = registry_->Create(*config);
        if (served.ok()) {
          created = *served;
          MutexLock lock(&mu_);
          created_[model] = sequence;
        } else {
          status = served.status();
        }
        break;
      }
      case LogRecord::Kind::kDelete: {
        status = registry_->Delete(model);
        if (status.ok()) {
          MutexLock lock(&mu_);
          created_.erase(model);
          versions_.erase(model);
        }
        break;
      }
      case LogRecord::Kind::kUpdate: {
        std::shared_ptr<ServedModel> served = registry_->Get(model);
        uint64_t created_at = 0;
        {
          MutexLock lock(&mu_);
          if (auto it = created_.find(model); it != created_.end()) created_at = it->second;
        }
        if (served == nullptr || created_at != record->created_sequence) {
          status = absl::NotFoundError(
              absl::StrCat("model ", Quote(model), " was deleted before the update was applied"));
          break;
        }
        auto batch = DecodeBatch(record->payload);
        if (!batch.ok()) {
          status = batch.status();
          break;
        }
        auto learned = served->Learn(batch->batch);
        if (learned.ok()) {
          scored = *std::move(learned);
        } else {
          status = learned.status();
        }
        break;
      }
    }
  }
  MutexLock lock(&mu_);
  if (!record.ok()) ++rejected_records_;
  applied_ = sequence;
  stream_sequence_ = std::max(stream_sequence_, sequence + message.pending());
  last_applied_nanos_ = message.unix_nanos();
  if (status.ok() && !model.empty() && record->kind != LogRecord::Kind::kDelete) {
    versions_[model] = sequence;
  }
  if (auto it = waiters_.find(std::string(message.msg_id())); it != waiters_.end()) {
    Waiter& w = *it->second;
    w.done = true;
    w.status = status;
    w.sequence = sequence;
    w.scored = std::move(scored);
    w.created = std::move(created);
    waiters_.erase(it);
  }
  applied_cv_.SignalAll();
}

// --- Publishing ------------------------------------------------------------

std::string Replica::NewMessageId() {
  return absl::StrCat(id_prefix_, "-", next_id_.fetch_add(1, std::memory_order_relaxed));
}

absl::StatusOr<std::shared_ptr<Replica::Waiter>> Replica::PublishAndWait(const std::string& record,
                                                                         std::string msg_id) {
  auto waiter = std::make_shared<Waiter>();
  bool registered = false;
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) return absl::UnavailableError(broken_.message());
    if (stopping_) return absl::UnavailableError("the replica is shutting down");
    // A second publisher with the same id (a client retrying before its
    // first attempt returned) publishes a duplicate and waits by sequence.
    registered = waiters_.try_emplace(msg_id, waiter).second;
  }
  auto unregister = [&] {
    if (!registered) return;
    MutexLock lock(&mu_);
    if (auto it = waiters_.find(msg_id); it != waiters_.end() && it->second == waiter) {
      waiters_.erase(it);
    }
  };
  const auto start = Clock::now();
  auto ack = log_->Publish(record, msg_id, options_.publish_timeout);
  if (options_.on_publish) options_.on_publish(SecondsSince(start), ack.ok());
  if (!ack.ok()) {
    unregister();
    return ack.status();
  }
  MutexLock lock(&mu_);
  const auto deadline = Clock::now() + options_.apply_timeout;
  if (ack->duplicate || !registered) {
    // Applied (or to be applied) under the first copy's sequence.
    while (applied_ < ack->sequence && !stopping_ && Clock::now() < deadline) {
      applied_cv_.WaitFor(&mu_, deadline - Clock::now());
    }
    if (registered) {
      if (auto it = waiters_.find(msg_id); it != waiters_.end() && it->second == waiter) {
        waiters_.erase(it);
      }
    }
    if (applied_ < ack->sequence) {
      return absl::UnavailableError(
          absl::StrCat("the record is in the replicated log at sequence ", ack->sequence,
                       " but this replica has applied only up to ", applied_, " after ",
                       options_.apply_timeout.count(), " ms"));
    }
    auto dup = std::make_shared<Waiter>();
    dup->done = true;
    dup->sequence = ack->sequence;
    return dup;
  }
  while (!waiter->done && Clock::now() < deadline) {
    applied_cv_.WaitFor(&mu_, deadline - Clock::now());
  }
  if (!waiter->done) {
    if (auto it = waiters_.find(msg_id); it != waiters_.end() && it->second == waiter) {
      waiters_.erase(it);
    }
    return absl::UnavailableError(
        absl::StrCat("the record is in the replicated log at sequence ", ack->sequence,
                     " but this replica has applied only up to ", applied_, " after ",
                     options_.apply_timeout.count(),
                     " ms; it will be applied: retry with the same "
                     "idempotency_key to learn its outcome without learning it twice"));
  }
  return waiter;
}

absl::StatusOr<Replica::Learned> Replica::Learn(const std::string& model,
                                                absl::Span<const TrainingExample> batch,
                                                std::string_view idempotency_key) {
  uint64_t created_at = 0;
  {
    MutexLock lock(&mu_);
    auto it = created_.find(model);
    if (it == created_.end()) {
      return absl::NotFoundError(absl::StrCat("model ", Quote(model), " not found"));
    }
    created_at = it->second;
  }
  std::string record;
  EncodeLogRecordHeader(LogRecord::Kind::kUpdate, model, created_at, &record);
  std::string payload;
  EncodeBatch(batch, &payload);
  record += payload;
  SealLogRecord(&record);
  std::string msg_id = idempotency_key.empty()
                           ? NewMessageId()
                           : absl::StrCat("u-", model, "-", std::string(idempotency_key));
  auto waiter = PublishAndWait(record, std::move(msg_id));
  if (!waiter.ok()) return waiter.status();
  if (!(*waiter)->status.ok()) return (*waiter)->status;
  Learned out;
  out.sequence = (*waiter)->sequence;
  out.scored = std::move((*waiter)->scored);
  out.deduplicated = out.scored.empty() && !batch.empty();
  return out;
}

absl::StatusOr<std::shared_ptr<ServedModel>> Replica::Create(const ModelConfig& config) {
  // Refuse a bad config here rather than publish a record every replica
  // refuses.
  if (auto model = CreateModel(config); !model.ok()) return model.status();
  if (registry_->Get(config.name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("model ", Quote(config.name), " already exists"));
  }
  LogRecord record;
  record.kind = LogRecord::Kind::kCreate;
  record.model = config.name;
  EncodeModelConfig(config, &record.payload);
  auto waiter = PublishAndWait(EncodeLogRecord(record), NewMessageId());
  if (!waiter.ok()) return waiter.status();
  if (!(*waiter)->status.ok()) return (*waiter)->status;
  return (*waiter)->created;
}

absl::Status Replica::Delete(const std::string& model) {
  if (registry_->Get(model) == nullptr) {
    return absl::NotFoundError(absl::StrCat("model ", Quote(model), " not found"));
  }
  LogRecord record;
  record.kind = LogRecord::Kind::kDelete;
  record.model = model;
  auto waiter = PublishAndWait(EncodeLogRecord(record), NewMessageId());
  if (!waiter.ok()) return waiter.status();
  return (*waiter)->status;
}

// --- Reading the position --------------------------------------------------

uint64_t Replica::applied_sequence() const {
  MutexLock lock(&mu_);
  return applied_;
}

uint64_t Replica::model_version(const std::string& model) const {
  MutexLock lock(&mu_);
  auto it = versions_.find(model);
  return it == versions_.end() ? 0 : it->second;
}

absl::Status Replica::AwaitApplied(uint64_t sequence, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  MutexLock lock(&mu_);
  while (applied_ < sequence && !stopping_ && Clock::now() < deadline) {
    applied_cv_.WaitFor(&mu_, deadline - Clock::now());
  }
  if (applied_ >= sequence) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("this replica has applied the replicated log up to model_version ", applied_,
                   ", behind the requested min_model_version ", sequence, " after waiting ",
                   timeout.count(), " ms: retry, or ask another replica"));
}

absl::Status Replica::CatchUp(std::chrono::milliseconds timeout) {
  auto state = log_->State();
  if (!state.ok()) return state.status();
  if (absl::Status s = AwaitApplied(state->last_sequence, timeout); !s.ok()) {
    return absl::DeadlineExceededError(s.message());
  }
  return absl::OkStatus();
}

ReplicaStatus Replica::status() const {
  ReplicaStatus out;
  out.nats_connected = log_->nats()->connected();
  MutexLock lock(&mu_);
  out.applied_sequence = applied_;
  out.stream_sequence = std::max(stream_sequence_, applied_);
  if (out.stream_sequence > applied_ && last_applied_nanos_ > 0) {
    out.lag_seconds = std::max<double>(0, (UnixNanos() - last_applied_nanos_) / 1e9);
  }
  out.published_snapshot_sequence = published_snapshot_;
  out.rejected_records = rejected_records_;
  out.broken = broken_;
  return out;
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
    *models = registry_->List();
    for (const std::shared_ptr<ServedModel>& served : *models) {
      ReplicaModel m;
      m.created_sequence = created[served->name()];
      m.contents.config = served->model().config();
      m.contents.log_sequence = snapshot.sequence;
      m.contents.state = served->model().ExportState();
      snapshot.models.push_back(std::move(m));
    }
  }
  ReplicaSnapshotReport report;
  report.pause_seconds = SecondsSince(start);
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
  if (publish) {
    if (absl::Status s =
            snapshots_->Publish(snapshot.sequence, bytes, options_.keep_published_snapshots);
        !s.ok()) {
      return s;
    }
    report.published = true;
    last_publish_check_ = Clock::now();
    last_seen_published_ = snapshot.sequence;
    // Records leave the log only once the older kept published snapshot
    // contains them.
    auto published = snapshots_->List();
    if (!published.ok()) return published.status();
    {
      MutexLock lock(&mu_);
      if (!published->empty()) {
        published_snapshot_ = std::max(published_snapshot_, published->front().sequence);
      }
    }
    if (published->size() >= static_cast<size_t>(options_.keep_published_snapshots)) {
      if (absl::Status s = log_->PurgeBelow(published->back().sequence + 1); !s.ok()) return s;
    }
  }
  report.seconds = SecondsSince(start);
  return report;
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
