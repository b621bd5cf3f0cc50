#include "server/model_writer.h"

#include "absl/strings/str_cat.h"

namespace clickd {

absl::StatusOr<ModelWriter::Learned> LocalModelWriter::Learn(
    ServedModel& served, absl::Span<const TrainingExample> batch,
    std::string_view idempotency_key) {
  // A key learned within the model's window is not learned again
  // (core/persist/idempotency_window.h, docs/api.md#idempotency).
  auto learned = served.Learn(batch, idempotency_key);
  if (!learned.ok()) return learned.status();
  return Learned{std::move(learned->scored), served.model().Updates(), learned->duplicate};
}

absl::Status LocalModelWriter::AwaitVersion(const ServedModel& served, uint64_t min_version) {
  const uint64_t version = served.model().Updates();
  if (version >= min_version) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("model ", served.name(), " is at model_version ", version,
                   ", behind the requested min_model_version ", min_version,
                   " (without replication, model_version counts the examples learned)"));
}

absl::StatusOr<ModelWriter::Learned> ReplicatedModelWriter::Learn(
    ServedModel& served, absl::Span<const TrainingExample> batch,
    std::string_view idempotency_key) {
  auto learned = replica_->Learn(served.name(), batch, idempotency_key);
  if (!learned.ok()) return learned.status();
  return Learned{std::move(learned->scored), learned->sequence, learned->deduplicated};
}

absl::StatusOr<SnapshotReport> ReplicatedModelWriter::SnapshotAll() {
  auto replica = replica_->Snapshot(/*publish=*/true);
  if (!replica.ok()) return replica.status();
  SnapshotReport report;
  report.sequence = replica->sequence;
  report.bytes = replica->bytes;
  report.coordinates = replica->coordinates;
  report.seconds = replica->seconds;
  report.pause_seconds = replica->pause_seconds;
  return report;
}

absl::StatusOr<std::shared_ptr<ServedModel>> ReplicatedModelWriter::Create(
    const ModelConfig& config) {
  if (config.feedback.enabled()) {
    return absl::FailedPreconditionError(
        "config.feedback: the impression-to-click loop is not replicated yet; serve a model with "
        "feedback.ttl_seconds > 0 from a clickd without --replication (docs/feedback.md)");
  }
  return replica_->Create(config);
}

}  // namespace clickd
