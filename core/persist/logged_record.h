// Applying one update-log record, whatever it holds, to a model: a learned
// batch (batch_codec.h), or a record of the impression-to-click loop
// (feedback_codec.h). What a restart's replay and a replica do with each
// record, so that both rebuild the state the writer had.
#ifndef CLICKD_CORE_PERSIST_LOGGED_RECORD_H_
#define CLICKD_CORE_PERSIST_LOGGED_RECORD_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/eval/metrics.h"
#include "core/feedback/feedback_loop.h"
#include "core/model/model.h"
#include "core/persist/feedback_codec.h"
#include "core/persist/idempotency_window.h"

namespace clickd {

struct AppliedRecord {
  PayloadKind kind = PayloadKind::kBatch;
  std::vector<ScoredExample> scored;  // a batch's pre-update scores
  FeedbackApplied feedback;           // a loop record's effects
};

// DataLoss for a record that does not decode, or a loop record for a model
// without a loop (`loop` null) or that does not fit its loop's state. A
// keyed record's key goes into `window` (may be null: a replica, whose
// stream deduplicates) at its time, then its record is applied.
absl::StatusOr<AppliedRecord> ApplyLoggedRecord(std::string_view record, Model& model,
                                                FeedbackLoop* loop,
                                                IdempotencyWindow* window = nullptr);

// The ImpressionExample views of a decoded record's impressions.
std::vector<ImpressionExample> ImpressionViews(const ImpressionsRecord& record);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_LOGGED_RECORD_H_
