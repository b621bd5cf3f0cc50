// Update-log payloads of the impression-to-click loop (issue 15), beside the
// learned batches of batch_codec.h:
//   - impressions: the hashed examples a Predict logged, and the first id the
//     model's JoinBuffer gave them (a replay checks that it gives the same);
//   - feedback: labels joined to impression ids (none: a tick of the clock
//     that only expires impressions).
// Each record carries the time it happened at (microseconds since the Unix
// epoch, the writer's clock), which is the JoinBuffer's only clock, so a
// replay expires the same impressions at the same records.
//
// Each payload starts with a fixed32 tag that a batch's first field (its
// group count, at most 2^24) can never be, so ClassifyPayload tells them
// apart, and a reader from before this format refuses them as damage rather
// than learning something else. Decoding is bounds-checked and fuzzed
// (fuzz/feedback_state_fuzz.cc). Pure functions.
#ifndef CLICKD_CORE_PERSIST_FEEDBACK_CODEC_H_
#define CLICKD_CORE_PERSIST_FEEDBACK_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/feedback/feedback_loop.h"

namespace clickd {

enum class PayloadKind { kBatch, kImpressions, kFeedback, kKeyed };

// kBatch for anything without one of the tags (DecodeBatch then judges it).
PayloadKind ClassifyPayload(std::string_view bytes);

struct LoggedImpression {
  float margin = 0;  // what Predict served
  std::vector<HashedFeature> features;
  std::vector<float> dense;
};

struct ImpressionsRecord {
  int64_t time_us = 0;
  uint64_t first_id = 0;
  std::vector<LoggedImpression> impressions;
};

struct FeedbackRecord {
  int64_t time_us = 0;
  std::vector<FeedbackItem> items;
};

// A record learned under an idempotency key (core/persist/idempotency_window.h):
// the key, the time it was written at, and the record itself (a batch or a
// feedback record, never another keyed one).
struct KeyedRecord {
  int64_t time_us = 0;
  std::string key;
  std::string_view inner;  // points into the decoded bytes
};
void EncodeKeyed(int64_t time_us, std::string_view key, std::string_view inner, std::string* out);
absl::StatusOr<KeyedRecord> DecodeKeyed(std::string_view bytes);

void EncodeImpressions(const ImpressionsRecord& record, std::string* out);
// The same bytes from views (what a Predict holds), without copying them
// into a record first.
void EncodeImpressions(int64_t time_us, uint64_t first_id,
                       absl::Span<const ImpressionExample> impressions, std::string* out);
void EncodeFeedback(const FeedbackRecord& record, std::string* out);

// DataLoss for bytes that do not parse, or values no writer writes
// (non-finite feature or dense values, labels or importances).
absl::StatusOr<ImpressionsRecord> DecodeImpressions(std::string_view bytes);
absl::StatusOr<FeedbackRecord> DecodeFeedback(std::string_view bytes);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_FEEDBACK_CODEC_H_
