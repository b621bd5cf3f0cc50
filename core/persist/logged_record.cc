#include "core/persist/logged_record.h"

#include <utility>

#include "core/persist/batch_codec.h"
#include "core/persist/idempotency_window.h"

namespace clickd {

std::vector<ImpressionExample> ImpressionViews(const ImpressionsRecord& record) {
  std::vector<ImpressionExample> views;
  views.reserve(record.impressions.size());
  for (const LoggedImpression& impression : record.impressions) {
    views.push_back({impression.features, impression.dense, impression.margin});
  }
  return views;
}

absl::StatusOr<AppliedRecord> ApplyLoggedRecord(std::string_view record, Model& model,
                                                FeedbackLoop* loop, IdempotencyWindow* window) {
  if (ClassifyPayload(record) == PayloadKind::kKeyed) {
    auto keyed = DecodeKeyed(record);
    if (!keyed.ok()) return keyed.status();
    if (window != nullptr) {
      const bool feedback = ClassifyPayload(keyed->inner) == PayloadKind::kFeedback;
      window->Insert(feedback ? IdempotencyWindow::FeedbackKey(keyed->key) : keyed->key,
                     keyed->time_us);
    }
    return ApplyLoggedRecord(keyed->inner, model, loop, nullptr);
  }
  AppliedRecord applied;
  applied.kind = ClassifyPayload(record);
  if (applied.kind == PayloadKind::kBatch) {
    auto decoded = DecodeBatch(record);
    if (!decoded.ok()) return decoded.status();
    applied.scored = LearnBatch(model, decoded->batch);
    return applied;
  }
  if (loop == nullptr) {
    return absl::DataLossError(
        "update log record belongs to the impression-to-click loop, which this model's config "
        "does not have");
  }
  if (applied.kind == PayloadKind::kImpressions) {
    auto decoded = DecodeImpressions(record);
    if (!decoded.ok()) return decoded.status();
    auto done = loop->ApplyImpressions(model, decoded->time_us, decoded->first_id,
                                       ImpressionViews(*decoded));
    if (!done.ok()) return done.status();
    applied.feedback = *std::move(done);
    return applied;
  }
  auto decoded = DecodeFeedback(record);
  if (!decoded.ok()) return decoded.status();
  applied.feedback = loop->ApplyFeedback(model, decoded->time_us, decoded->items);
  return applied;
}

}  // namespace clickd
