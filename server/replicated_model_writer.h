// ReplicatedModelWriter: the ModelWriter of --replication=jetstream
// (model_writer.h): every change goes through the replicated log and is
// applied here in stream order (replication/replica.h); model_version is
// the stream sequence. Kept apart from model_writer.h so that only the
// files that build one see NATS's headers.
//
// Thread safety: safe for concurrent use.
#ifndef CLICKD_SERVER_REPLICATED_MODEL_WRITER_H_
#define CLICKD_SERVER_REPLICATED_MODEL_WRITER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "replication/replica.h"
#include "server/model_writer.h"

namespace clickd {

class ReplicatedModelWriter final : public ModelWriter {
 public:
  // `max_version_wait`: how long AwaitVersion waits for the stream.
  ReplicatedModelWriter(Replica* replica, std::chrono::milliseconds max_version_wait)
      : replica_(replica), max_version_wait_(max_version_wait) {}

  absl::StatusOr<Learned> Learn(ServedModel& served, absl::Span<const TrainingExample> batch,
                                std::string_view idempotency_key) override;
  bool LearnsAsynchronously() const override { return true; }
  absl::Status LearnAsync(ServedModel& served, absl::Span<const TrainingExample> batch,
                          std::string_view idempotency_key, LearnDone done) override;
  absl::StatusOr<Learned> LearnAt(ServedModel& served, absl::Span<const TrainingExample> batch,
                                  const SourcePosition& position) override;
  absl::Status SyncPositions() override;
  absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config) override {
    return replica_->Create(config);
  }
  absl::Status Delete(const std::string& name) override { return replica_->Delete(name); }
  // The loop's records go through the replicated log, each with this
  // process's time; ids are given when a record is applied.
  absl::StatusOr<uint64_t> LogImpressions(ServedModel& served,
                                          absl::Span<const ImpressionExample> impressions) override;
  absl::StatusOr<Joined> ApplyFeedback(ServedModel& served, absl::Span<const FeedbackItem> items,
                                       std::string_view idempotency_key) override;
  absl::StatusOr<Joined> ApplyFeedbackAt(ServedModel& served, absl::Span<const FeedbackItem> items,
                                         const SourcePosition& position) override;
  // Publishes a tick when this replica sees an impression due; every
  // replica that does publishes the same message id (Replica::Tick).
  absl::Status ExpireImpressions(ServedModel& served) override;
  uint64_t Version(const ServedModel&) const override { return replica_->applied_sequence(); }
  absl::Status AwaitVersion(const ServedModel&, uint64_t min_version) override {
    return replica_->AwaitApplied(min_version, max_version_wait_);
  }
  std::optional<ReplicaStatus> Replication() const override { return replica_->status(); }
  bool SnapshotsAllModels() const override { return true; }
  absl::StatusOr<SnapshotReport> SnapshotAll() override;

 private:
  Replica* const replica_;
  const std::chrono::milliseconds max_version_wait_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_REPLICATED_MODEL_WRITER_H_
