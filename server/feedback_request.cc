#include "server/feedback_request.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

absl::StatusOr<std::vector<FeedbackItem>> ValidateFeedbackRequest(
    const v1::FeedbackRequest& request, const Limits& limits, int64_t now_us) {
  const size_t n = request.items_size();
  if (n == 0) return absl::InvalidArgumentError("items is empty; Feedback needs at least one");
  if (n > limits.max_feedback_items) {
    return absl::ResourceExhaustedError(
        absl::StrCat("items has ", n, " entries; the limit is ", limits.max_feedback_items));
  }
  std::vector<FeedbackItem> items(n);
  for (size_t i = 0; i < n; ++i) {
    const v1::FeedbackItem& in = request.items(static_cast<int>(i));
    const std::string field = absl::StrCat("items[", i, "]");
    if (absl::Status s = CheckLabel(LossType::kLogistic, in.label(), field + ".label"); !s.ok()) {
      return s;
    }
    const float importance = in.has_importance() ? in.importance() : 1.0f;
    if (!std::isfinite(importance) || importance < 0 || importance > kMaxImportance) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".importance is ", importance,
                                                     "; must be finite and in [0, ", kMaxImportance,
                                                     "]"));
    }
    if (in.event_time_unix_micros() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".event_time_unix_micros is ",
                                                     in.event_time_unix_micros(),
                                                     "; must be >= 0 (0: now)"));
    }
    const int64_t skew_us = int64_t{limits.max_event_time_skew_seconds} * 1'000'000;
    if (in.event_time_unix_micros() > now_us && in.event_time_unix_micros() - now_us > skew_us) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".event_time_unix_micros is ", in.event_time_unix_micros(), ", ",
          (in.event_time_unix_micros() - now_us) / 1'000'000,
          " s after the server's clock; the limit is ", limits.max_event_time_skew_seconds,
          " s ahead (--max_event_time_skew_seconds)"));
    }
    items[i].impression_id = in.impression_id();
    items[i].label = in.label() == 1.0f ? 1.0f : 0.0f;
    items[i].importance = importance;
    items[i].event_time_us =
        in.event_time_unix_micros() == 0 ? now_us : in.event_time_unix_micros();
  }
  return items;
}

v1::FeedbackStatus ToFeedbackStatus(JoinOutcome outcome) {
  switch (outcome) {
    case JoinOutcome::kJoined:
      return v1::FEEDBACK_JOINED;
    case JoinOutcome::kUnknown:
      return v1::FEEDBACK_UNKNOWN;
    case JoinOutcome::kExpired:
      return v1::FEEDBACK_EXPIRED;
    case JoinOutcome::kAlreadyLabelled:
      return v1::FEEDBACK_ALREADY_LABELLED;
    case JoinOutcome::kOtherModel:
      return v1::FEEDBACK_OTHER_MODEL;
  }
  return v1::FEEDBACK_STATUS_UNSPECIFIED;
}

}  // namespace clickd
