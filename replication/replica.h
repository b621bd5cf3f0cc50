// Replica: this process's copy of every model, kept equal to every other
// replica's by applying the replicated log (JetStreamLog) in sequence order.
//
//   * One applier thread reads the stream and applies each record: creates
//     and deletes to the registry, update batches to their model. It is the
//     only writer of models, so replicas that applied the same sequence hold
//     the same bytes.
//   * Learn, Create and Delete publish a record, wait for JetStream's
//     acknowledgement, then wait until the applier here has applied it and
//     answer with what applying it did (the pre-update scores; the created
//     model; NotFound...). A publisher is matched to its record by message
//     id, so a record applied before its acknowledgement arrives is not
//     missed.
//   * Snapshots: every model's state copied at one sequence S (the applier
//     is paused only for the copy), written to <data_dir>/replica and, at
//     most once per snapshot interval, published to the snapshot stream, after
//     which the log is purged below the older of the two newest published
//     snapshots: no record leaves the stream before a published snapshot
//     contains it. Start loads the newest valid local snapshot, or, with an
//     empty volume or a log purged past it, the newest published one, and
//     resumes at S + 1.
//
// Thread safety: safe for concurrent use. Lock order: apply_mu_, then mu_.
#ifndef CLICKD_REPLICATION_REPLICA_H_
#define CLICKD_REPLICATION_REPLICA_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/feedback/feedback_loop.h"
#include "core/persist/env.h"
#include "core/serving/registry.h"
#include "replication/applied_ids.h"
#include "replication/divergence.h"
#include "replication/jetstream_log.h"
#include "replication/replica_snapshot.h"
#include "replication/replica_status.h"
#include "replication/snapshot_store.h"

namespace clickd {

class AsyncPublisher;  // replication/async_publisher.h

struct ReplicaOptions {
  // Local snapshots go to <data_dir>/replica; empty: none (every start
  // bootstraps from the published snapshot and the stream).
  std::string data_dir;
  Env* env = Env::Default();
  // This replica's name in messages ids and logs.
  std::string replica_id = "clickd";
  std::chrono::milliseconds publish_timeout{2000};
  // How long a publisher waits for the applier here to reach its record.
  std::chrono::milliseconds apply_timeout{5000};
  // Local snapshots every interval (0: only when asked); published at most
  // once per interval, and not when another replica published since.
  std::chrono::milliseconds snapshot_interval{60000};
  int keep_local_snapshots = 2;
  int keep_published_snapshots = 2;
  // A follower that never publishes: no records (Learn, Create and the
  // rest refuse with FailedPrecondition), no checkpoints of its own (it
  // still compares its peers'), no published snapshots and no purges. An
  // embedded replica (embedded/embedded_replica.h) is one.
  bool read_only = false;
  // Called after every publish attempt with its latency and outcome. May be
  // null; must be thread-safe and quick.
  std::function<void(double seconds, bool acknowledged)> on_publish;

  // --- Divergence detection (divergence.h) ---
  // The core NATS subject replicas exchange checkpoints on (empty: none are
  // sent or compared).
  std::string checkpoint_subject;
  std::chrono::milliseconds checkpoint_interval{1000};
  // A state digest of every model after each sequence that is a multiple
  // of this (0: none). It reads every coordinate while the applier waits.
  uint64_t state_digest_records = 10000;
  // A peer not heard from for this long is forgotten (verdicts, retention).
  std::chrono::milliseconds peer_ttl{15000};

  // --- Retention ---
  // Records kept below the newest published snapshot however recent the
  // older one is (0: none beyond the older snapshot).
  uint64_t retain_records = 10000;

  // How long Start retries reading the stream and the published snapshots
  // while NATS answers UNAVAILABLE.
  std::chrono::milliseconds restore_timeout{0};

  // Tests only: replaces each record the reader delivers with what it
  // returns (none, itself, others), to give this replica another copy of
  // the log than its peers'.
  std::function<std::vector<OwnedLogRecord>(OwnedLogRecord)> rewrite_for_testing;
};

// How Start restored the models.
struct ReplicaStartReport {
  std::string source;  // "local snapshot <path>", "published snapshot", "empty"
  uint64_t snapshot_sequence = 0;
  size_t models = 0;
  std::vector<std::string> rejected;  // damaged snapshots skipped, newest first
  double seconds = 0;
};

struct ReplicaSnapshotReport {
  std::string path;  // the local copy ("" without a data directory)
  uint64_t sequence = 0;
  uint64_t bytes = 0;
  uint64_t coordinates = 0;
  bool published = false;
  double pause_seconds = 0;
  double seconds = 0;
};

class Replica {
 public:
  // Restores the models into `registry` (which must be empty and
  // memory-only: the replica is their durability), then starts applying
  // the log. `log` and `snapshots` must outlive the replica.
  static absl::StatusOr<std::unique_ptr<Replica>> Start(ModelRegistry* registry, JetStreamLog* log,
                                                        SnapshotStore* snapshots,
                                                        ReplicaOptions options,
                                                        ReplicaStartReport* report);
  // Stops applying; waiting publishers get Unavailable.
  ~Replica();

  // Waits until this replica has applied the stream as far as it reached
  // when called (FailedPrecondition-free: Unavailable naming NATS if the
  // stream cannot be asked, DeadlineExceeded on timeout).
  absl::Status CatchUp(std::chrono::milliseconds timeout);

  struct Learned {
    std::vector<ScoredExample> scored;  // empty for a deduplicated retry
    uint64_t sequence = 0;
    bool deduplicated = false;
  };
  // Publishes a validated batch for `model` and returns once this replica
  // has learned it. `idempotency_key` (may be empty) makes a retry within
  // the stream's duplicate window learn nothing more.
  absl::StatusOr<Learned> Learn(const std::string& model, absl::Span<const TrainingExample> batch,
                                std::string_view idempotency_key);
  // Learn without waiting: publishes the batch and returns; `done` gets
  // what Learn would have returned, exactly once, on nats.c's thread or the
  // applier's (so it must be quick and must not call back into this
  // replica's waiting calls). An error here means nothing was published
  // and `done` is not called.
  using LearnDone = std::function<void(absl::StatusOr<Learned>)>;
  absl::Status LearnAsync(const std::string& model, absl::Span<const TrainingExample> batch,
                          std::string_view idempotency_key, LearnDone done);
  // Publishes a batch read from a source's partition (a Kafka source,
  // kafka/kafka_source.h) and returns once this replica has learned it.
  // The record carries the position key of `position.next`, so every
  // replica holds the partition's position with the examples (and in its
  // snapshots); its message id names the model, the partition,
  // `position.start`, `next` and `attempt`, and a replica applies it only
  // while the partition's position is still `start`. So a batch read by
  // two consumers (a partition moving between replicas) is learned once:
  // the later copy learns nothing, everywhere, and its publisher gets
  // AlreadyExists and must read the partition again from the position this
  // replica now holds. A retry of one attempt (the same id) is dropped by
  // JetStream within its duplicate window: `deduplicated`.
  absl::StatusOr<Learned> LearnAt(const std::string& model, absl::Span<const TrainingExample> batch,
                                  const SourcePosition& position);

  // --- The impression-to-click loop (core/feedback/feedback_loop.h) ---
  // Its records go through the log like batches do, so every replica holds
  // the same join buffer. Each carries its publisher's time (`time_us`),
  // the loop's only clock.
  struct LoopApplied {
    FeedbackApplied applied;  // outcomes; an impressions record's ids
    uint64_t sequence = 0;
    bool deduplicated = false;  // a retry of a key in the stream's window
  };
  // Publishes impressions a Predict logged and returns once applied here,
  // with the ids the buffer gave them when applied (publishers on other
  // replicas take ids too: only the stream's order decides).
  // ResourceExhausted, nothing logged anywhere, if the buffer could not
  // take them when their record was applied.
  absl::StatusOr<LoopApplied> LogImpressions(const std::string& model, int64_t time_us,
                                             absl::Span<const ImpressionExample> impressions);
  // Publishes checked labels; `idempotency_key` as for Learn.
  absl::StatusOr<LoopApplied> Feedback(const std::string& model, int64_t time_us,
                                       absl::Span<const FeedbackItem> items,
                                       std::string_view idempotency_key);
  // Publishes labels read from a source's feedback topic, as LearnAt
  // publishes a batch: under the position key of `position.next`, with the
  // same message id and apply-time check (AlreadyExists: another consumer
  // applied these records first).
  absl::StatusOr<LoopApplied> FeedbackAt(const std::string& model, int64_t time_us,
                                         absl::Span<const FeedbackItem> items,
                                         const SourcePosition& position);
  // Publishes a tick of the loop's clock at `time_us`, which expires what
  // was due at `due_us` (the oldest impression's expiry, as this replica
  // sees it). Every replica whose clock passes the same expiry publishes
  // the same message id, so the stream keeps one tick.
  absl::Status Tick(const std::string& model, int64_t time_us, int64_t due_us);

  // This replica's name (ReplicaOptions::replica_id).
  const std::string& id() const { return options_.replica_id; }

  absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config);
  absl::Status Delete(const std::string& model);

  // The last sequence applied here: every Predict answered now reflects
  // every record up to it.
  uint64_t applied_sequence() const;
  // Waits (at most `timeout`) until applied_sequence() >= sequence;
  // Unavailable naming both sequences if it does not get there.
  absl::Status AwaitApplied(uint64_t sequence, std::chrono::milliseconds timeout);
  // The sequence of the last record applied to `model` (0: unknown model).
  uint64_t model_version(const std::string& model) const;

  // `model`'s state digest (core/model/state_digest.h) as of the sequence
  // applied now: the applier waits while the model is read. NotFound for a
  // model this replica does not have.
  absl::StatusOr<std::string> StateDigestOf(const std::string& model)
      ABSL_LOCKS_EXCLUDED(apply_mu_);

  // Writes a local snapshot now (and publishes it if `publish`).
  absl::StatusOr<ReplicaSnapshotReport> Snapshot(bool publish);

  ReplicaStatus status() const;

 private:
  struct CheckpointFeed;
  using Clock = std::chrono::steady_clock;

  // One published record this replica answers for (replica_publish.cc): it
  // is finished once JetStream acknowledged it and the applier here
  // reached it, or when either fails or takes too long.
  struct Waiter {
    // --- Filled in by the applier ---
    bool done = false;  // applied here
    absl::Status status;
    uint64_t sequence = 0;
    // The stream already held the message id: the record was applied (or
    // will be) under the first copy's sequence, and nothing is known of it.
    bool duplicate = false;
    // The sequence this replica's reader delivered the record at (for a
    // duplicate the stream stored again, not `sequence`).
    uint64_t delivered = 0;
    AppliedRecord applied;  // an UPDATE record's effects
    std::shared_ptr<ServedModel> created;

    // --- The publish ---
    std::string msg_id;
    // In waiters_: the first publisher of its message id (a second one, a
    // client retrying before its first attempt returned, is answered by
    // sequence, as a duplicate).
    bool registered = false;
    std::optional<PublishAck> ack;
    Clock::time_point expires;  // answered Unavailable after this
    bool finished = false;
    std::function<void(absl::StatusOr<std::shared_ptr<Waiter>>)> on_done;
  };
  using Published = std::function<void(absl::StatusOr<std::shared_ptr<Waiter>>)>;
  // What finishing a waiter calls, run once mu_ is released.
  struct Completion {
    Published on_done;
    absl::StatusOr<std::shared_ptr<Waiter>> outcome;
  };

  Replica(ModelRegistry* registry, JetStreamLog* log, SnapshotStore* snapshots,
          ReplicaOptions options);
  absl::Status Restore(ReplicaStartReport* report);
  absl::Status LoadSnapshot(const ReplicaSnapshot& snapshot) ABSL_LOCKS_EXCLUDED(apply_mu_);
  // Publishes a record and waits until it is applied here.
  // Publishes `record` and returns at once; `done` later gets the waiter
  // (applied here, or a duplicate) or an error, exactly once. An error
  // here means nothing was published and `done` is not called.
  absl::Status PublishAsync(const std::string& record, std::string msg_id, Published done);
  // JetStream's answer to a record PublishAsync sent at `sent`.
  void Acknowledged(const std::shared_ptr<Waiter>& waiter, absl::StatusOr<PublishAck> ack,
                    Clock::time_point sent);
  // Finishes `waiter` if it is acknowledged and applied (or, for a
  // duplicate, the first copy is); returns whether it did.
  bool TryFinish(const std::shared_ptr<Waiter>& waiter, std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(const std::shared_ptr<Waiter>& waiter,
              absl::StatusOr<std::shared_ptr<Waiter>> outcome, std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finishes the waiters of duplicates the applier has now reached, and
  // the ones past their time.
  void FinishReached(std::vector<Completion>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireWaiters();
  static void RunCompletions(std::vector<Completion> completions);
  absl::StatusOr<std::shared_ptr<Waiter>> PublishAndWait(const std::string& record,
                                                         std::string msg_id);
  // What Learn answers for an applied waiter.
  static absl::StatusOr<Learned> LearnedFrom(const Waiter& waiter);
  // An UPDATE record of `model`, whose payload `encode_payload` appends;
  // NotFound for a model this replica does not have.
  absl::StatusOr<std::string> UpdateRecord(const std::string& model,
                                           absl::FunctionRef<void(std::string*)> encode_payload);
  // PublishAndWait for an UPDATE record of `model`, whose payload
  // `encode_payload` appends (encoded once, in place).
  absl::StatusOr<std::shared_ptr<Waiter>> PublishUpdate(
      const std::string& model, absl::FunctionRef<void(std::string*)> encode_payload,
      std::string msg_id);
  // The message id of a record under a caller's idempotency key (`kind`
  // keeps Update's and Feedback's keys apart), or a fresh one without.
  // The message id of a source's record read at `position` (LearnAt,
  // FeedbackAt): model, its create, topic, partition, start, next, attempt.
  std::string SourceMessageId(const std::string& model, const SourcePosition& position);
  // A source's record: `inner` keyed by the partition's next position.
  static void EncodePositioned(int64_t time_us, const SourcePosition& position,
                               std::string_view inner, std::string* out);
  std::string MessageIdFor(std::string_view kind, const std::string& model,
                           std::string_view idempotency_key);
  void ApplyLoop();
  // Applies `record` if it is the next one; false on a gap (after checking
  // whether the stream was purged past this replica).
  bool Deliver(const LogRecordView& record);
  // Applies the record at applied_ + 1.
  void Apply(const LogRecordView& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Passes over a record whose message id was applied at `first` within
  // the duplicate window (applied_ids.h): nothing is learned, its
  // publisher is told it is a duplicate of `first`.
  void SkipDuplicate(const LogRecordView& record, uint64_t first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Learns how far the stream goes; breaks the replica if it was purged
  // past `next`. Returns whether it has records from `next` on.
  bool CheckStream(uint64_t next);
  // Sleeps `delay` (waking early to stop); false if stopping.
  bool Pause(std::chrono::milliseconds delay);
  // XXH3-64 over every model's name and StateDigest, in name order.
  uint64_t DigestOfModels() const;
  // Checkpoints (replica_checkpoints.cc): peers' arrive on nats.c's thread
  // and go to monitor_; this replica's are published every interval.
  absl::Status SubscribeCheckpoints();
  void UnsubscribeCheckpoints();
  void CheckpointLoop();
  absl::Status broken() const;
  // Whether this replica is diverged now (and why).
  absl::Status DivergedStatus() const;
  // Where the log may be purged below after publishing a snapshot (0: not).
  uint64_t PurgePoint(const std::vector<SnapshotStore::Published>& published) const;
  // Snapshot's work; `models` gets the models it copied.
  absl::StatusOr<ReplicaSnapshotReport> SnapshotModels(
      bool publish, std::vector<std::shared_ptr<ServedModel>>* models);
  void SnapshotLoop();
  // Whether this replica should publish its next snapshot.
  bool PublishDue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(snapshot_mu_);
  std::string NewMessageId();

  ModelRegistry* const registry_;
  JetStreamLog* const log_;
  SnapshotStore* const snapshots_;
  const ReplicaOptions options_;
  const std::string id_prefix_;  // replica id + start time: unique per process
  std::atomic<uint64_t> next_id_{0};

  // Held by the applier for each record, and by a snapshot while it copies.
  Mutex apply_mu_;
  AppliedIds applied_ids_ ABSL_GUARDED_BY(apply_mu_);
  mutable Mutex mu_;
  CondVar applied_cv_;
  uint64_t applied_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t stream_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_applied_nanos_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t published_snapshot_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_records_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t duplicate_records_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The sequence of each model's CREATE record, and of the last record
  // applied to it.
  absl::flat_hash_map<std::string, uint64_t> created_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> versions_ ABSL_GUARDED_BY(mu_);
  // Publishers waiting for their record, by message id.
  absl::flat_hash_map<std::string, std::shared_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);
  // Every published record not yet answered.
  absl::flat_hash_set<std::shared_ptr<Waiter>> in_flight_ ABSL_GUARDED_BY(mu_);
  // Acknowledged duplicates, by the sequence the applier must reach.
  std::multimap<uint64_t, std::shared_ptr<Waiter>> by_sequence_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<AsyncPublisher> publisher_;

  Mutex snapshot_mu_;  // one snapshot at a time
  std::chrono::steady_clock::time_point last_publish_check_ ABSL_GUARDED_BY(snapshot_mu_);
  uint64_t last_seen_published_ ABSL_GUARDED_BY(snapshot_mu_) = 0;

  const std::shared_ptr<DivergenceMonitor> monitor_;
  std::shared_ptr<CheckpointFeed> checkpoint_feed_;

  std::thread applier_;
  std::thread snapshotter_;
  std::thread checkpointer_;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_REPLICA_H_
