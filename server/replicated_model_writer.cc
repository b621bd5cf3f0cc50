#include "server/replicated_model_writer.h"

#include "absl/strings/str_cat.h"

namespace clickd {

absl::StatusOr<ModelWriter::Learned> ReplicatedModelWriter::Learn(
    ServedModel& served, absl::Span<const TrainingExample> batch,
    std::string_view idempotency_key) {
  auto learned = replica_->Learn(served.name(), batch, idempotency_key);
  if (!learned.ok()) return learned.status();
  return Learned{std::move(learned->scored), learned->sequence, learned->deduplicated};
}

absl::Status ReplicatedModelWriter::LearnAsync(ServedModel& served,
                                               absl::Span<const TrainingExample> batch,
                                               std::string_view idempotency_key, LearnDone done) {
  return replica_->LearnAsync(
      served.name(), batch, idempotency_key,
      [done = std::move(done)](absl::StatusOr<Replica::Learned> learned) {
        if (!learned.ok()) {
          done(learned.status());
        } else {
          done(Learned{std::move(learned->scored), learned->sequence, learned->deduplicated});
        }
      });
}

absl::StatusOr<ModelWriter::Learned> ReplicatedModelWriter::LearnAt(
    ServedModel& served, absl::Span<const TrainingExample> batch, const SourcePosition& position) {
  auto learned = replica_->LearnAt(served.name(), batch, position);
  if (learned.status().code() == absl::StatusCode::kAlreadyExists) {
    return Learned{{}, replica_->applied_sequence(), /*duplicate=*/true};
  }
  if (!learned.ok()) return learned.status();
  return Learned{std::move(learned->scored), learned->sequence, learned->deduplicated};
}

absl::Status ReplicatedModelWriter::SyncPositions() {
  return replica_->CatchUp(std::chrono::seconds(10));
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

absl::StatusOr<uint64_t> ReplicatedModelWriter::LogImpressions(
    ServedModel& served, absl::Span<const ImpressionExample> impressions) {
  const int64_t now = WallNowMicros();
  // Impressions this replica's buffer cannot take are refused before they
  // are published; the record's apply checks again, against the stream's
  // state, which other replicas' impressions may have filled meanwhile.
  absl::StatusOr<uint64_t> applied = served.feedback()->ReserveIds(now, impressions);
  if (applied.ok()) {
    auto logged = replica_->LogImpressions(served.name(), now, impressions);
    applied = logged.ok() ? absl::StatusOr<uint64_t>(logged->applied.first_id) : logged.status();
  }
  if (applied.status().code() == absl::StatusCode::kResourceExhausted) {
    served.RecordRefusedImpressions(impressions.size());
  }
  return applied;
}

absl::StatusOr<ModelWriter::Joined> ReplicatedModelWriter::ApplyFeedback(
    ServedModel& served, absl::Span<const FeedbackItem> items, std::string_view idempotency_key) {
  auto applied = replica_->Feedback(served.name(), WallNowMicros(), items, idempotency_key);
  if (!applied.ok()) return applied.status();
  return Joined{std::move(applied->applied.outcomes), applied->sequence, applied->deduplicated};
}

absl::StatusOr<ModelWriter::Joined> ReplicatedModelWriter::ApplyFeedbackAt(
    ServedModel& served, absl::Span<const FeedbackItem> items, const SourcePosition& position) {
  auto applied = replica_->FeedbackAt(served.name(), WallNowMicros(), items, position);
  if (applied.status().code() == absl::StatusCode::kAlreadyExists) {
    return Joined{{}, replica_->applied_sequence(), /*duplicate=*/true};
  }
  if (!applied.ok()) return applied.status();
  return Joined{std::move(applied->applied.outcomes), applied->sequence, applied->deduplicated};
}

absl::Status ReplicatedModelWriter::ExpireImpressions(ServedModel& served) {
  if (served.feedback() == nullptr) return absl::OkStatus();
  const int64_t now = WallNowMicros();
  const std::optional<int64_t> due = served.feedback()->buffer().NextExpiryUs();
  if (!due.has_value() || *due > now) return absl::OkStatus();
  return replica_->Tick(served.name(), now, *due);
}

}  // namespace clickd
