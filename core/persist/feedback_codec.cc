#include "core/persist/feedback_codec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"

namespace clickd {
namespace {

using coding::Decoder;

// Above any batch's group count (batch_codec.cc allows at most 2^24).
constexpr uint32_t kImpressionsTag = 0xC11C1001u;
constexpr uint32_t kFeedbackTag = 0xC11C1002u;
constexpr uint32_t kKeyedTag = 0xC11C1003u;
constexpr uint32_t kMaxKeyBytes = 1024;

absl::Status Damaged(std::string_view what, std::string_view detail) {
  return absl::DataLossError(absl::StrCat("update log record does not parse as ",
                                          absl::string_view(what.data(), what.size()), ": ",
                                          absl::string_view(detail.data(), detail.size())));
}

uint32_t Tag(std::string_view bytes) {
  Decoder in(bytes);
  uint32_t tag = 0;
  return in.GetFixed32(&tag) ? tag : 0;
}

}  // namespace

PayloadKind ClassifyPayload(std::string_view bytes) {
  switch (Tag(bytes)) {
    case kImpressionsTag:
      return PayloadKind::kImpressions;
    case kFeedbackTag:
      return PayloadKind::kFeedback;
    case kKeyedTag:
      return PayloadKind::kKeyed;
    default:
      return PayloadKind::kBatch;
  }
}

// keyed := tag u32, time_us i64, key (length u32, bytes), the inner record
void EncodeKeyed(int64_t time_us, std::string_view key, std::string_view inner, std::string* out) {
  coding::PutFixed32(out, kKeyedTag);
  coding::PutFixed64(out, static_cast<uint64_t>(time_us));
  coding::PutString(out, key);
  out->append(inner.data(), inner.size());
}

absl::StatusOr<KeyedRecord> DecodeKeyed(std::string_view bytes) {
  constexpr std::string_view kWhat = "keyed record";
  Decoder in(bytes);
  uint32_t tag = 0;
  uint64_t time = 0;
  KeyedRecord record;
  if (!in.GetFixed32(&tag) || tag != kKeyedTag || !in.GetFixed64(&time) ||
      !in.GetString(&record.key)) {
    return Damaged(kWhat, "header");
  }
  if (record.key.empty() || record.key.size() > kMaxKeyBytes) return Damaged(kWhat, "key length");
  record.time_us = static_cast<int64_t>(time);
  record.inner = in.remaining();
  const PayloadKind inner = ClassifyPayload(record.inner);
  if (inner == PayloadKind::kKeyed || inner == PayloadKind::kImpressions) {
    return Damaged(kWhat, "a record no writer keys");
  }
  return record;
}

// impressions := tag u32, time_us i64, first_id u64, count u32,
//                (margin f32, feature_count u32, dense_count u32,
//                 (key u64, value f32)*, f32*)*
void EncodeImpressions(int64_t time_us, uint64_t first_id,
                       absl::Span<const ImpressionExample> impressions, std::string* out) {
  coding::PutFixed32(out, kImpressionsTag);
  coding::PutFixed64(out, static_cast<uint64_t>(time_us));
  coding::PutFixed64(out, first_id);
  coding::PutFixed32(out, static_cast<uint32_t>(impressions.size()));
  for (const ImpressionExample& impression : impressions) {
    coding::PutFloat(out, impression.margin);
    coding::PutFixed32(out, static_cast<uint32_t>(impression.features.size()));
    coding::PutFixed32(out, static_cast<uint32_t>(impression.dense.size()));
    for (const HashedFeature& f : impression.features) {
      coding::PutFixed64(out, f.key);
      coding::PutFloat(out, f.value);
    }
    for (float v : impression.dense) coding::PutFloat(out, v);
  }
}

void EncodeImpressions(const ImpressionsRecord& record, std::string* out) {
  std::vector<ImpressionExample> views;
  views.reserve(record.impressions.size());
  for (const LoggedImpression& impression : record.impressions) {
    views.push_back({impression.features, impression.dense, impression.margin});
  }
  EncodeImpressions(record.time_us, record.first_id, views, out);
}

absl::StatusOr<ImpressionsRecord> DecodeImpressions(std::string_view bytes) {
  constexpr std::string_view kWhat = "impressions";
  Decoder in(bytes);
  uint32_t tag = 0, count = 0;
  uint64_t time = 0;
  ImpressionsRecord record;
  if (!in.GetFixed32(&tag) || tag != kImpressionsTag || !in.GetFixed64(&time) ||
      !in.GetFixed64(&record.first_id) || !in.GetFixed32(&count)) {
    return Damaged(kWhat, "header");
  }
  record.time_us = static_cast<int64_t>(time);
  // Each impression takes at least 12 bytes: a larger count is damage.
  if (count == 0 || count > in.remaining().size() / 12) return Damaged(kWhat, "count");
  record.impressions.resize(count);
  for (LoggedImpression& impression : record.impressions) {
    uint32_t features = 0, dense = 0;
    if (!in.GetFloat(&impression.margin) || !std::isfinite(impression.margin) ||
        !in.GetFixed32(&features) || !in.GetFixed32(&dense) ||
        uint64_t{features} * 12 + uint64_t{dense} * 4 > in.remaining().size()) {
      return Damaged(kWhat, "an impression's counts");
    }
    impression.features.resize(features);
    for (HashedFeature& f : impression.features) {
      in.GetFixed64(&f.key);
      in.GetFloat(&f.value);
      if (!std::isfinite(f.value)) return Damaged(kWhat, "a feature value not finite");
    }
    impression.dense.resize(dense);
    for (float& v : impression.dense) {
      in.GetFloat(&v);
      if (!std::isfinite(v)) return Damaged(kWhat, "a dense value not finite");
    }
  }
  if (!in.remaining().empty()) return Damaged(kWhat, "bytes after the last impression");
  return record;
}

// feedback := tag u32, time_us i64, count u32,
//             (impression_id u64, label f32, importance f32, event_time_us i64)*
// A record without items is a tick: it only expires impressions.
void EncodeFeedback(const FeedbackRecord& record, std::string* out) {
  coding::PutFixed32(out, kFeedbackTag);
  coding::PutFixed64(out, static_cast<uint64_t>(record.time_us));
  coding::PutFixed32(out, static_cast<uint32_t>(record.items.size()));
  for (const FeedbackItem& item : record.items) {
    coding::PutFixed64(out, item.impression_id);
    coding::PutFloat(out, item.label);
    coding::PutFloat(out, item.importance);
    coding::PutFixed64(out, static_cast<uint64_t>(item.event_time_us));
  }
}

absl::StatusOr<FeedbackRecord> DecodeFeedback(std::string_view bytes) {
  constexpr std::string_view kWhat = "feedback";
  constexpr size_t kItemBytes = 24;
  Decoder in(bytes);
  uint32_t tag = 0, count = 0;
  uint64_t time = 0;
  if (!in.GetFixed32(&tag) || tag != kFeedbackTag || !in.GetFixed64(&time) ||
      !in.GetFixed32(&count)) {
    return Damaged(kWhat, "header");
  }
  if (in.remaining().size() != uint64_t{count} * kItemBytes) {
    return Damaged(kWhat, "count");
  }
  FeedbackRecord record;
  record.time_us = static_cast<int64_t>(time);
  record.items.resize(count);
  for (FeedbackItem& item : record.items) {
    uint64_t event_time = 0;
    in.GetFixed64(&item.impression_id);
    in.GetFloat(&item.label);
    in.GetFloat(&item.importance);
    in.GetFixed64(&event_time);
    item.event_time_us = static_cast<int64_t>(event_time);
    if (!std::isfinite(item.label) || !std::isfinite(item.importance) || item.importance < 0) {
      return Damaged(kWhat, "a label or importance no writer writes");
    }
  }
  return record;
}

}  // namespace clickd
