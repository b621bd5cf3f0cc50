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

absl::StatusOr<ModelWriter::Learned> LocalModelWriter::LearnAt(
    ServedModel& served, absl::Span<const TrainingExample> batch, const SourcePosition& position) {
  // One process consumes the partition: the position key goes into the
  // update log with the batch (core/persist/idempotency_window.h).
  return Learn(served, batch,
               IdempotencyWindow::PositionKey(position.topic, position.partition, position.next));
}

absl::Status LocalModelWriter::AwaitVersion(const ServedModel& served, uint64_t min_version) {
  const uint64_t version = served.model().Updates();
  if (version >= min_version) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("model ", served.name(), " is at model_version ", version,
                   ", behind the requested min_model_version ", min_version,
                   " (without replication, model_version counts the examples learned)"));
}

absl::StatusOr<ModelWriter::Joined> LocalModelWriter::ApplyFeedback(
    ServedModel& served, absl::Span<const FeedbackItem> items, std::string_view idempotency_key) {
  Joined joined;
  auto outcomes = served.ApplyFeedback(items, idempotency_key, &joined.duplicate);
  if (!outcomes.ok()) return outcomes.status();
  joined.outcomes = *std::move(outcomes);
  joined.version = served.model().Updates();
  return joined;
}

absl::StatusOr<ModelWriter::Joined> LocalModelWriter::ApplyFeedbackAt(
    ServedModel& served, absl::Span<const FeedbackItem> items, const SourcePosition& position) {
  // As LearnAt: the position key goes into the update log with the labels
  // (IdempotencyWindow::FeedbackKey keeps it a position).
  return ApplyFeedback(
      served, items,
      IdempotencyWindow::PositionKey(position.topic, position.partition, position.next));
}

}  // namespace clickd
