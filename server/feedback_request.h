// A FeedbackRequest checked in one place and turned into the items core
// joins (core/feedback/feedback_loop.h). The checks, in order; the first
// error is returned and nothing is applied:
//   1. the request has 1..Limits::max_feedback_items items
//      (RESOURCE_EXHAUSTED above it);
//   2. every label is logistic (0/1 or -1/+1), every importance finite and
//      in [0, kMaxImportance], every event time >= 0 and at most
//      Limits::max_event_time_skew_seconds after `now_us` (INVALID_ARGUMENT
//      naming items[i] and the field).
// An event time of 0 becomes `now_us`. Pure function.
#ifndef CLICKD_SERVER_FEEDBACK_REQUEST_H_
#define CLICKD_SERVER_FEEDBACK_REQUEST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/feedback/feedback_loop.h"
#include "server/limits.h"

namespace clickd {

absl::StatusOr<std::vector<FeedbackItem>> ValidateFeedbackRequest(
    const v1::FeedbackRequest& request, const Limits& limits, int64_t now_us);

// The wire status of a join outcome.
v1::FeedbackStatus ToFeedbackStatus(JoinOutcome outcome);

}  // namespace clickd

#endif  // CLICKD_SERVER_FEEDBACK_REQUEST_H_
