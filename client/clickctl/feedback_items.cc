#include "client/clickctl/feedback_items.h"

#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

// The statuses a server sends, in the order clickctl prints them.
constexpr v1::FeedbackStatus kStatuses[] = {v1::FEEDBACK_JOINED, v1::FEEDBACK_UNKNOWN,
                                            v1::FEEDBACK_EXPIRED, v1::FEEDBACK_ALREADY_LABELLED,
                                            v1::FEEDBACK_OTHER_MODEL};

}  // namespace

absl::Status CheckFeedbackItem(const v1::FeedbackItem& item, absl::string_view what) {
  // The server's own check of Feedback labels (logistic: 0/1 or -1/+1).
  const std::string field = absl::StrCat(what, ": label");
  if (absl::Status s = CheckLabel(LossType::kLogistic, item.label(), field); !s.ok()) return s;
  const double importance = item.has_importance() ? item.importance() : 1.0;
  if (!std::isfinite(importance) || importance < 0 || importance > kMaxImportance) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": importance is ", importance, "; must be finite and in [0, ", kMaxImportance, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::FeedbackItem> ParseFeedbackLine(absl::string_view line, absl::string_view what) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
  if (fields.size() < 2 || fields.size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": expected \"impression_id label [importance]\", got ", fields.size(), " fields"));
  }
  v1::FeedbackItem item;
  uint64_t id = 0;
  if (!absl::SimpleAtoi(fields[0], &id)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": impression_id \"", fields[0], "\" is not a decimal uint64"));
  }
  item.set_impression_id(id);
  float label = 0;
  if (!absl::SimpleAtof(fields[1], &label)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": label \"", fields[1], "\" is not a number"));
  }
  item.set_label(label);
  if (fields.size() == 3) {
    float importance = 0;
    if (!absl::SimpleAtof(fields[2], &importance)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": importance \"", fields[2], "\" is not a number"));
    }
    item.set_importance(importance);
  }
  if (absl::Status s = CheckFeedbackItem(item, what); !s.ok()) return s;
  return item;
}

std::string FeedbackStatusName(v1::FeedbackStatus status) {
  return std::string(absl::StripPrefix(v1::FeedbackStatus_Name(status), "FEEDBACK_"));
}

void FeedbackTally::Add(const v1::FeedbackResponse& response) {
  for (int status : response.statuses()) {
    if (v1::FeedbackStatus_IsValid(status)) ++counts_[status];
    ++items_;
  }
}

uint64_t FeedbackTally::count(v1::FeedbackStatus status) const { return counts_[status]; }

std::string FeedbackTally::Json() const {
  JsonWriter w;
  for (v1::FeedbackStatus status : kStatuses) w.Integer(FeedbackStatusName(status), count(status));
  return w.Finish();
}

std::string FeedbackTally::Text() const {
  std::vector<std::string> parts;
  for (v1::FeedbackStatus status : kStatuses) {
    parts.push_back(absl::StrCat(FeedbackStatusName(status), " ", count(status)));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace clickd
