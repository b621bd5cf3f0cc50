#include "replication/replica.h"

#include <xxhash.h>

#include <algorithm>
#include <iostream>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/quote.h"
#include "core/model/state_digest.h"
#include "core/persist/batch_codec.h"
#include "core/persist/feedback_codec.h"
#include "core/persist/snapshot.h"
#include "replication/async_publisher.h"
#include "replication/log_record.h"
#include "replication/replica_snapshot.h"

namespace clickd {
namespace {

// The start of the message id of a source's batch read at `start` from
// `partition` (LearnAt); the id goes on with "<next>-<attempt>-".
std::string SourceMessageIdPrefix(std::string_view model, uint64_t created_at,
                                  std::string_view topic, int32_t partition, int64_t start) {
  return absl::StrCat("k-", std::string(model), "-", created_at, "-", std::string(topic), "-",
                      partition, "-", start, "-");
}

// OK if `payload` is not a source's batch, or is one read at the position
// its partition has in `served` now; AlreadyExists otherwise (another
// consumer's copy of these records was applied first).
absl::Status CheckSourcePosition(const ServedModel& served, std::string_view model,
                                 uint64_t created_at, std::string_view payload,
                                 std::string_view msg_id) {
  if (ClassifyPayload(payload) != PayloadKind::kKeyed) return absl::OkStatus();
  auto keyed = DecodeKeyed(payload);
  std::string topic;
  int32_t partition = 0;
  int64_t next = 0;
  if (!keyed.ok() || !IdempotencyWindow::ParsePositionKey(keyed->key, &topic, &partition, &next)) {
    return absl::OkStatus();  // applying reports the damage
  }
  const int64_t current = served.idempotency().Position(topic, partition);
  if (absl::StartsWith(absl::string_view(msg_id.data(), msg_id.size()),
                       SourceMessageIdPrefix(model, created_at, topic, partition, current))) {
    return absl::OkStatus();
  }
  return absl::AlreadyExistsError(absl::StrCat(
      "model ", Quote(model), ": topic ", topic, " partition ", partition, " is at offset ",
      current, " in the replicated log, not where batch ", std::string(msg_id), " was read (up to ",
      next, "): another consumer learned these records first"));
}

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
// Bounds of the wait before a replaced reader's successor opens.
constexpr std::chrono::milliseconds kMinReopenDelay{100};
constexpr std::chrono::milliseconds kMaxReopenDelay{5000};
// How often the applier looks for publishers to answer as timed out.
constexpr std::chrono::milliseconds kExpiryInterval{100};

}  // namespace

Replica::Replica(ModelRegistry* registry, JetStreamLog* log, SnapshotStore* snapshots,
                 ReplicaOptions options)
    : registry_(registry),
      log_(log),
      snapshots_(snapshots),
      options_(std::move(options)),
      id_prefix_(absl::StrCat(options_.replica_id, "-", UnixNanos())),
      applied_ids_(log_->options().duplicate_window),
      monitor_(std::make_shared<DivergenceMonitor>(
          DivergenceMonitor::Options{id_prefix_, 16384, 16, options_.peer_ttl})) {}

absl::StatusOr<std::unique_ptr<Replica>> Replica::Start(ModelRegistry* registry, JetStreamLog* log,
                                                        SnapshotStore* snapshots,
                                                        ReplicaOptions options,
                                                        ReplicaStartReport* report) {
  if (registry->durable() || registry->size() != 0) {
    return absl::FailedPreconditionError(
        "a replica needs an empty memory-only registry: it is the models' durability");
  }
  std::unique_ptr<Replica> replica(new Replica(registry, log, snapshots, std::move(options)));
  auto publisher = AsyncPublisher::Create(log);
  if (!publisher.ok()) return publisher.status();
  replica->publisher_ = *std::move(publisher);
  const auto start = Clock::now();
  if (absl::Status s = replica->Restore(report); !s.ok()) return s;
  report->seconds = SecondsSince(start);
  if (absl::Status s = replica->SubscribeCheckpoints(); !s.ok()) return s;
  replica->applier_ = std::thread([r = replica.get()] { r->ApplyLoop(); });
  replica->snapshotter_ = std::thread([r = replica.get()] { r->SnapshotLoop(); });
  if (replica->checkpoint_feed_ != nullptr && !replica->options_.read_only) {
    replica->checkpointer_ = std::thread([r = replica.get()] { r->CheckpointLoop(); });
  }
  return replica;
}

Replica::~Replica() {
  std::vector<Completion> completions;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    std::vector<std::shared_ptr<Waiter>> unanswered(in_flight_.begin(), in_flight_.end());
    for (const std::shared_ptr<Waiter>& waiter : unanswered) {
      Finish(waiter, absl::UnavailableError("the replica is shutting down"), &completions);
    }
    applied_cv_.SignalAll();
  }
  RunCompletions(std::move(completions));
  // No acknowledgement reaches this replica after this.
  if (publisher_ != nullptr) publisher_->Cancel();
  if (applier_.joinable()) applier_.join();
  if (snapshotter_.joinable()) snapshotter_.join();
  if (checkpointer_.joinable()) checkpointer_.join();
  UnsubscribeCheckpoints();
}

// --- Applying --------------------------------------------------------------

void Replica::ApplyLoop() {
  std::unique_ptr<JetStreamLog::Reader> reader;
  auto last_state = Clock::now() - std::chrono::hours(1);
  auto last_message = Clock::now();  // or the reader's start
  // Time between replacing a reader and opening the next: grows while
  // readers deliver nothing that applies, so a replica that cannot move on
  // does not open consumers in a loop.
  std::chrono::milliseconds reopen_delay{0};
  auto replace_reader = [&] {
    reader.reset();
    reopen_delay = std::clamp(reopen_delay * 2, kMinReopenDelay, kMaxReopenDelay);
  };
  auto last_expiry = Clock::now();
  for (;;) {
    // Publishers whose acknowledgement or record did not come in time are
    // answered here: late by at most kPoll while the reader waits, or the
    // pause between readers while none is open.
    if (Clock::now() - last_expiry >= kExpiryInterval) {
      last_expiry = Clock::now();
      ExpireWaiters();
    }
    uint64_t next;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      next = applied_ + 1;
    }
    if (!broken().ok()) {
      // Keep the lag figures true while stopped.
      if (SecondsSince(last_state) >= 5) {
        last_state = Clock::now();
        CheckStream(next);
      }
      if (!Pause(std::chrono::seconds(1))) return;
      continue;
    }
    if (reader == nullptr) {
      if (!Pause(reopen_delay)) return;
      auto opened = log_->ReadFrom(next);
      if (!opened.ok()) {
        replace_reader();
        continue;
      }
      reader = *std::move(opened);
      last_message = Clock::now();
    }
    auto message = reader->Next(kPoll);
    if (!message.ok()) {
      replace_reader();
      continue;
    }
    if (!message->has_value()) {
      // Idle: learn how far the stream goes, at most once a second. The
      // stream holds records we have not got, and nothing came for a
      // while: the consumer did not survive (all NATS nodes restarted,
      // say). Read again from the next sequence.
      if (SecondsSince(last_state) >= 1) {
        last_state = Clock::now();
        if (CheckStream(next) && SecondsSince(last_message) >= kStalled) replace_reader();
      }
      continue;
    }
    last_message = Clock::now();
    const LogMessage& m = ***message;
    bool in_order = true;
    if (options_.rewrite_for_testing) {
      for (const OwnedLogRecord& r : options_.rewrite_for_testing(m.Owned())) {
        if (in_order) in_order = Deliver(r.view());
      }
    } else {
      in_order = Deliver(m.view());
    }
    if (!in_order) {
      last_state = Clock::now();
      replace_reader();
    } else if (applied_sequence() >= next) {
      reopen_delay = std::chrono::milliseconds(0);
    }
  }
}

bool Replica::Deliver(const LogRecordView& record) {
  const uint64_t next = applied_sequence() + 1;
  if (record.sequence < next) return true;  // already applied (a redelivery)
  if (record.sequence > next) {
    // A gap: a new reader starts at `next`, unless the stream no longer
    // holds it.
    CheckStream(next);
    return false;
  }
  MutexLock apply(&apply_mu_);
  Apply(record);
  return true;
}

bool Replica::CheckStream(uint64_t next) {
  auto state = log_->State();
  if (!state.ok()) return false;
  MutexLock lock(&mu_);
  stream_sequence_ = std::max(stream_sequence_, state->last_sequence);
  if (state->first_sequence > next && broken_.ok()) {
    broken_ = absl::DataLossError(
        absl::StrCat("stream ", log_->options().stream, " was purged up to sequence ",
                     state->first_sequence - 1, " while this replica had applied only ", next - 1,
                     ": restart it to bootstrap from the newest published snapshot"));
    std::cerr << "clickd: replication stopped: " << broken_.message() << std::endl;
  }
  return broken_.ok() && state->last_sequence >= next;
}

bool Replica::Pause(std::chrono::milliseconds delay) {
  const auto deadline = Clock::now() + delay;
  MutexLock lock(&mu_);
  while (!stopping_ && Clock::now() < deadline) applied_cv_.WaitFor(&mu_, deadline - Clock::now());
  return !stopping_;
}

absl::StatusOr<std::string> Replica::StateDigestOf(const std::string& model) {
  MutexLock apply(&apply_mu_);
  std::shared_ptr<ServedModel> served = registry_->Get(model);
  if (served == nullptr) {
    return absl::NotFoundError(absl::StrCat("model ", Quote(model), " not found"));
  }
  return StateDigest(served->model());
}

uint64_t Replica::DigestOfModels() const {
  std::vector<std::shared_ptr<ServedModel>> models = registry_->List();
  std::sort(models.begin(), models.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  std::string names_and_digests;
  for (const std::shared_ptr<ServedModel>& served : models) {
    absl::StrAppend(&names_and_digests, served->name(), "=", StateDigest(served->model()), ";");
  }
  return XXH3_64bits(names_and_digests.data(), names_and_digests.size());
}

void Replica::Apply(const LogRecordView& message) {
  const uint64_t sequence = message.sequence;
  if (!message.msg_id.empty()) {
    if (std::optional<uint64_t> first = applied_ids_.Seen(message.msg_id, message.unix_nanos)) {
      SkipDuplicate(message, *first);
      return;
    }
    applied_ids_.Add(message.msg_id, sequence, message.unix_nanos);
  }
  absl::Status status;
  AppliedRecord applied;
  std::shared_ptr<ServedModel> created;
  std::string model;
  auto record = DecodeLogRecord(message.data);
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
        // A source's batch is applied only at the position it was read
        // from (LearnAt).
        status = CheckSourcePosition(*served, model, created_at, record->payload, message.msg_id);
        if (!status.ok()) break;
        // A batch, or a record of the impression-to-click loop.
        auto done = served->ApplyReplicated(record->payload);
        if (done.ok()) {
          applied = *std::move(done);
        } else {
          status = done.status();
        }
        break;
      }
    }
  }
  monitor_->Applied(sequence, message.data);
  if (options_.state_digest_records > 0 && sequence % options_.state_digest_records == 0) {
    monitor_->StateDigestAt(sequence, DigestOfModels());
  }
  std::vector<Completion> completions;
  absl::Cleanup answer = [&] { RunCompletions(std::move(completions)); };
  MutexLock lock(&mu_);
  if (!record.ok()) ++rejected_records_;
  applied_ = sequence;
  stream_sequence_ = std::max(stream_sequence_, sequence + message.pending);
  last_applied_nanos_ = message.unix_nanos;
  if (status.ok() && !model.empty() && record->kind != LogRecord::Kind::kDelete) {
    versions_[model] = sequence;
  }
  if (auto it = waiters_.find(std::string(message.msg_id)); it != waiters_.end()) {
    Waiter& w = *it->second;
    w.done = true;
    w.status = status;
    w.sequence = sequence;
    w.delivered = sequence;
    w.applied = std::move(applied);
    w.created = std::move(created);
    std::shared_ptr<Waiter> waiter = std::move(it->second);
    waiters_.erase(it);
    TryFinish(waiter, &completions);
  }
  FinishReached(&completions);
  applied_cv_.SignalAll();
}

void Replica::SkipDuplicate(const LogRecordView& message, uint64_t first) {
  const uint64_t sequence = message.sequence;
  std::cerr << "clickd: stream record " << sequence << " repeats message id " << message.msg_id
            << " first applied at " << first << " within the duplicate window: skipped"
            << std::endl;
  // Still a record of the log: the chain and the sequences go on.
  monitor_->Applied(sequence, message.data);
  if (options_.state_digest_records > 0 && sequence % options_.state_digest_records == 0) {
    monitor_->StateDigestAt(sequence, DigestOfModels());
  }
  std::vector<Completion> completions;
  absl::Cleanup answer = [&] { RunCompletions(std::move(completions)); };
  MutexLock lock(&mu_);
  ++duplicate_records_;
  applied_ = sequence;
  stream_sequence_ = std::max(stream_sequence_, sequence + message.pending);
  last_applied_nanos_ = message.unix_nanos;
  if (auto it = waiters_.find(std::string(message.msg_id)); it != waiters_.end()) {
    Waiter& w = *it->second;
    w.done = true;
    w.sequence = first;
    w.delivered = sequence;
    w.duplicate = true;
    std::shared_ptr<Waiter> waiter = std::move(it->second);
    waiters_.erase(it);
    TryFinish(waiter, &completions);
  }
  FinishReached(&completions);
  applied_cv_.SignalAll();
}

// --- Publishing ------------------------------------------------------------

std::string Replica::NewMessageId() {
  return absl::StrCat(id_prefix_, "-", next_id_.fetch_add(1, std::memory_order_relaxed));
}

absl::StatusOr<std::string> Replica::UpdateRecord(
    const std::string& model, absl::FunctionRef<void(std::string*)> encode_payload) {
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
  encode_payload(&record);  // appends
  SealLogRecord(&record);
  return record;
}

absl::StatusOr<std::shared_ptr<Replica::Waiter>> Replica::PublishUpdate(
    const std::string& model, absl::FunctionRef<void(std::string*)> encode_payload,
    std::string msg_id) {
  absl::StatusOr<std::string> record = UpdateRecord(model, encode_payload);
  if (!record.ok()) return record.status();
  auto waiter = PublishAndWait(*record, std::move(msg_id));
  if (!waiter.ok()) return waiter.status();
  if (!(*waiter)->status.ok()) return (*waiter)->status;
  return waiter;
}

std::string Replica::MessageIdFor(std::string_view kind, const std::string& model,
                                  std::string_view idempotency_key) {
  if (idempotency_key.empty()) return NewMessageId();
  return absl::StrCat(std::string(kind), "-", model, "-", std::string(idempotency_key));
}

absl::StatusOr<Replica::Learned> Replica::LearnedFrom(const Waiter& waiter) {
  if (!waiter.status.ok()) return waiter.status;
  Replica::Learned out;
  out.sequence = waiter.sequence;
  out.scored = waiter.applied.scored;
  out.deduplicated = waiter.duplicate;
  return out;
}

absl::StatusOr<Replica::Learned> Replica::Learn(const std::string& model,
                                                absl::Span<const TrainingExample> batch,
                                                std::string_view idempotency_key) {
  auto waiter = PublishUpdate(
      model, [&](std::string* out) { EncodeBatch(batch, out); },
      MessageIdFor("u", model, idempotency_key));
  if (!waiter.ok()) return waiter.status();
  return LearnedFrom(**waiter);
}

absl::Status Replica::LearnAsync(const std::string& model, absl::Span<const TrainingExample> batch,
                                 std::string_view idempotency_key, LearnDone done) {
  absl::StatusOr<std::string> record =
      UpdateRecord(model, [&](std::string* out) { EncodeBatch(batch, out); });
  if (!record.ok()) return record.status();
  return PublishAsync(*record, MessageIdFor("u", model, idempotency_key),
                      [done = std::move(done)](absl::StatusOr<std::shared_ptr<Waiter>> waiter) {
                        if (!waiter.ok()) {
                          done(waiter.status());
                        } else {
                          done(LearnedFrom(**waiter));
                        }
                      });
}

std::string Replica::SourceMessageId(const std::string& model, const SourcePosition& position) {
  uint64_t created_at = 0;
  {
    MutexLock lock(&mu_);
    if (auto it = created_.find(model); it != created_.end()) created_at = it->second;
  }
  return absl::StrCat(
      SourceMessageIdPrefix(model, created_at, position.topic, position.partition, position.start),
      position.next, "-", position.attempt);
}

void Replica::EncodePositioned(int64_t time_us, const SourcePosition& position,
                               std::string_view inner, std::string* out) {
  EncodeKeyed(time_us,
              IdempotencyWindow::PositionKey(position.topic, position.partition, position.next),
              inner, out);
}

absl::StatusOr<Replica::Learned> Replica::LearnAt(const std::string& model,
                                                  absl::Span<const TrainingExample> batch,
                                                  const SourcePosition& position) {
  const int64_t time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  auto waiter = PublishUpdate(
      model,
      [&](std::string* out) {
        std::string inner;
        EncodeBatch(batch, &inner);
        EncodePositioned(time_us, position, inner, out);
      },
      SourceMessageId(model, position));
  if (!waiter.ok()) return waiter.status();
  Learned out;
  out.sequence = (*waiter)->sequence;
  out.scored = std::move((*waiter)->applied.scored);
  out.deduplicated = (*waiter)->duplicate;
  return out;
}

absl::StatusOr<Replica::LoopApplied> Replica::LogImpressions(
    const std::string& model, int64_t time_us, absl::Span<const ImpressionExample> impressions) {
  auto waiter = PublishUpdate(
      model,
      [&](std::string* out) { EncodeImpressions(time_us, kIdsAssignedAtApply, impressions, out); },
      NewMessageId());
  if (!waiter.ok()) return waiter.status();
  if ((*waiter)->duplicate) {
    // Only a message id of ours repeated could do this: a bug, and the ids
    // are unknown.
    return absl::InternalError("an impressions record was taken for a duplicate");
  }
  return LoopApplied{std::move((*waiter)->applied.feedback), (*waiter)->sequence, false};
}

absl::StatusOr<Replica::LoopApplied> Replica::Feedback(const std::string& model, int64_t time_us,
                                                       absl::Span<const FeedbackItem> items,
                                                       std::string_view idempotency_key) {
  auto waiter = PublishUpdate(
      model,
      [&](std::string* out) {
        FeedbackRecord record;
        record.time_us = time_us;
        record.items.assign(items.begin(), items.end());
        EncodeFeedback(record, out);
      },
      MessageIdFor("f", model, idempotency_key));
  if (!waiter.ok()) return waiter.status();
  return LoopApplied{std::move((*waiter)->applied.feedback), (*waiter)->sequence,
                     (*waiter)->duplicate};
}

absl::StatusOr<Replica::LoopApplied> Replica::FeedbackAt(const std::string& model, int64_t time_us,
                                                         absl::Span<const FeedbackItem> items,
                                                         const SourcePosition& position) {
  auto waiter = PublishUpdate(
      model,
      [&](std::string* out) {
        FeedbackRecord record;
        record.time_us = time_us;
        record.items.assign(items.begin(), items.end());
        std::string inner;
        EncodeFeedback(record, &inner);
        EncodePositioned(time_us, position, inner, out);
      },
      SourceMessageId(model, position));
  if (!waiter.ok()) return waiter.status();
  return LoopApplied{std::move((*waiter)->applied.feedback), (*waiter)->sequence,
                     (*waiter)->duplicate};
}

absl::Status Replica::Tick(const std::string& model, int64_t time_us, int64_t due_us) {
  uint64_t created_at = 0;
  {
    MutexLock lock(&mu_);
    if (auto it = created_.find(model); it != created_.end()) created_at = it->second;
  }
  // The model's incarnation and the expiry it is for: the same id from
  // every replica that saw the same buffer.
  const std::string msg_id = absl::StrCat("t-", model, "-", created_at, "-", due_us);
  auto waiter = PublishUpdate(
      model,
      [&](std::string* out) {
        FeedbackRecord tick;
        tick.time_us = time_us;
        EncodeFeedback(tick, out);
      },
      msg_id);
  return waiter.status();
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
  if ((*waiter)->created == nullptr) {
    // Only a record the stream stored twice (skipped the second time)
    // could do this; the first copy created it.
    if (std::shared_ptr<ServedModel> served = registry_->Get(config.name)) return served;
    return absl::UnavailableError("the create record was stored twice; retry");
  }
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
  out.duplicate_records = duplicate_records_;
  out.broken = broken_;
  out.divergence = monitor_->Report(Clock::now());
  return out;
}

absl::Status Replica::broken() const {
  MutexLock lock(&mu_);
  return broken_;
}

absl::Status Replica::DivergedStatus() const {
  DivergenceReport report = monitor_->Report(Clock::now());
  if (!report.diverged) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "this replica's copy of the replicated log or models diverged from its peers (",
      report.reason,
      "); it serves reads but refuses writes: send writes to another replica, and heal this one "
      "as docs/replication.md#divergence says"));
}

}  // namespace clickd
