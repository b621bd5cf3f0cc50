// ModelWriter: how the service changes models and says which version of a
// model answered. Two implementations:
//
//   LocalModelWriter       the embedded default: the registry and each
//                          model's journal (file update log) directly;
//                          model_version counts the examples learned.
//   ReplicatedModelWriter  --replication=jetstream: every change goes
//                          through the replicated log and is applied here
//                          in stream order; model_version is the stream
//                          sequence (server/replicated_model_writer.h, the
//                          one server file besides replication_setup.cc
//                          that sees replication/replica.h and so NATS).
//
// Thread safety: implementations are safe for concurrent use.
#ifndef CLICKD_SERVER_MODEL_WRITER_H_
#define CLICKD_SERVER_MODEL_WRITER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/serving/registry.h"
#include "replication/replica_status.h"

namespace clickd {

class ModelWriter {
 public:
  virtual ~ModelWriter() = default;

  struct Learned {
    std::vector<ScoredExample> scored;  // empty for a deduplicated retry
    uint64_t version = 0;               // the model_version the update produced
    bool duplicate = false;             // the key was learned before: nothing was
  };
  // Learns a validated batch. `idempotency_key` may be empty.
  virtual absl::StatusOr<Learned> Learn(ServedModel& served,
                                        absl::Span<const TrainingExample> batch,
                                        std::string_view idempotency_key) = 0;
  // Whether LearnAsync works: the writer learns without holding the
  // caller's thread (a replica, whose publish and apply run elsewhere).
  virtual bool LearnsAsynchronously() const { return false; }
  // Learn, answered later: `done` gets what Learn returns, exactly once,
  // on another thread; it must be quick. An error here means nothing was
  // learned or sent and `done` is not called.
  using LearnDone = std::function<void(absl::StatusOr<Learned>)>;
  virtual absl::Status LearnAsync(ServedModel& served, absl::Span<const TrainingExample> batch,
                                  std::string_view idempotency_key, LearnDone done) {
    return absl::UnimplementedError("this writer learns synchronously");
  }
  // Learns a validated batch read from a source's partition (a Kafka
  // source, kafka/kafka_source.h), recording `position.next` as the
  // partition's position in the same durable record. `duplicate`: nothing
  // was learned because the model's position is no longer
  // `position.start` (a replica: another replica's consumer learned these
  // records first); the source reads the partition again from the
  // model's position.
  virtual absl::StatusOr<Learned> LearnAt(ServedModel& served,
                                          absl::Span<const TrainingExample> batch,
                                          const SourcePosition& position) = 0;
  // Waits (bounded) until the models' source positions include every batch
  // learned anywhere before the call: a replica catches up with the
  // stream before a source seeks to its positions.
  virtual absl::Status SyncPositions() { return absl::OkStatus(); }
  virtual absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config) = 0;
  virtual absl::Status Delete(const std::string& name) = 0;

  // --- The impression-to-click loop (`served` has one) ---
  // Remembers a Predict's checked impressions and returns the first one's
  // id (the others follow in order). ResourceExhausted, nothing logged,
  // when the join buffer cannot take them all (counted as refused).
  virtual absl::StatusOr<uint64_t> LogImpressions(
      ServedModel& served, absl::Span<const ImpressionExample> impressions) = 0;
  struct Joined {
    std::vector<JoinOutcome> outcomes;  // one per item; none for a duplicate
    uint64_t version = 0;
    bool duplicate = false;
  };
  // Joins checked labels; `idempotency_key` may be empty.
  virtual absl::StatusOr<Joined> ApplyFeedback(ServedModel& served,
                                               absl::Span<const FeedbackItem> items,
                                               std::string_view idempotency_key) = 0;
  // Joins checked labels read from a source's feedback topic, recording
  // `position.next` as the partition's position in the same durable
  // record (as LearnAt does for examples); `duplicate` as for LearnAt.
  virtual absl::StatusOr<Joined> ApplyFeedbackAt(ServedModel& served,
                                                 absl::Span<const FeedbackItem> items,
                                                 const SourcePosition& position) = 0;
  // Expires the impressions whose TTL has passed now, if any (the server's
  // clock, server/impression_expirer.h).
  virtual absl::Status ExpireImpressions(ServedModel& served) = 0;

  // The model_version a Predict scored on `served` now reports.
  virtual uint64_t Version(const ServedModel& served) const = 0;
  // OK once Version(served) >= min_version; otherwise an error after at
  // most the writer's wait, naming both versions.
  virtual absl::Status AwaitVersion(const ServedModel& served, uint64_t min_version) = 0;

  // This replica's view of the replicated log; nullopt without replication.
  virtual std::optional<ReplicaStatus> Replication() const { return std::nullopt; }

  // Whether SnapshotModel snapshots every model at one sequence (a
  // replica) instead of the one named.
  virtual bool SnapshotsAllModels() const { return false; }
  virtual absl::StatusOr<SnapshotReport> SnapshotAll() {
    return absl::UnimplementedError("snapshots are per model");
  }
};

class LocalModelWriter final : public ModelWriter {
 public:
  explicit LocalModelWriter(ModelRegistry* registry) : registry_(registry) {}

  absl::StatusOr<Learned> Learn(ServedModel& served, absl::Span<const TrainingExample> batch,
                                std::string_view idempotency_key) override;
  absl::StatusOr<Learned> LearnAt(ServedModel& served, absl::Span<const TrainingExample> batch,
                                  const SourcePosition& position) override;
  absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config) override {
    return registry_->Create(config);
  }
  absl::Status Delete(const std::string& name) override { return registry_->Delete(name); }
  absl::StatusOr<uint64_t> LogImpressions(
      ServedModel& served, absl::Span<const ImpressionExample> impressions) override {
    return served.LogImpressions(impressions);
  }
  absl::StatusOr<Joined> ApplyFeedback(ServedModel& served, absl::Span<const FeedbackItem> items,
                                       std::string_view idempotency_key) override;
  absl::StatusOr<Joined> ApplyFeedbackAt(ServedModel& served, absl::Span<const FeedbackItem> items,
                                         const SourcePosition& position) override;
  absl::Status ExpireImpressions(ServedModel& served) override {
    return served.ExpireImpressions();
  }
  uint64_t Version(const ServedModel& served) const override { return served.model().Updates(); }
  absl::Status AwaitVersion(const ServedModel& served, uint64_t min_version) override;

 private:
  ModelRegistry* const registry_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_MODEL_WRITER_H_
