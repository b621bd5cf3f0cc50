// What `clickctl feedback` and `clickctl replay --delayed_clicks` share about
// the Feedback RPC: the text form of an item ("impression_id label
// [importance]"), the names clickctl prints for its statuses, and a tally of
// the statuses a run received. Pure functions and a value type; not
// thread-safe.
#ifndef CLICKD_CLIENT_CLICKCTL_FEEDBACK_ITEMS_H_
#define CLICKD_CLIENT_CLICKCTL_FEEDBACK_ITEMS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "clickd/v1/clickd.pb.h"
#include "client/clickctl/json_writer.h"

namespace clickd {

// Checks an item's label (0 or 1; -1 reads as 0, as the server reads it)
// and importance (finite, in [0, 1e4]); errors name `what`, e.g. "line 3".
absl::Status CheckFeedbackItem(const v1::FeedbackItem& item, absl::string_view what);

// Parses "impression_id label [importance]", fields separated by blanks:
// the impression_id in decimal, as `clickctl predict --log_impressions`
// prints it. InvalidArgument naming `what` and the field.
absl::StatusOr<v1::FeedbackItem> ParseFeedbackLine(absl::string_view line, absl::string_view what);

// The status without its FEEDBACK_ prefix: JOINED, UNKNOWN, EXPIRED,
// ALREADY_LABELLED, OTHER_MODEL (STATUS_UNSPECIFIED for 0).
std::string FeedbackStatusName(v1::FeedbackStatus status);

// How many items came back with each status.
class FeedbackTally {
 public:
  // Counts the statuses of one response.
  void Add(const v1::FeedbackResponse& response);

  uint64_t items() const { return items_; }
  uint64_t count(v1::FeedbackStatus status) const;
  // {"JOINED":n,"UNKNOWN":n,"EXPIRED":n,"ALREADY_LABELLED":n,"OTHER_MODEL":n},
  // zeros included, so that a script can read every key.
  std::string Json() const;
  // "JOINED 3, UNKNOWN 0, ...".
  std::string Text() const;

 private:
  std::array<uint64_t, v1::FeedbackStatus_ARRAYSIZE> counts_{};
  uint64_t items_ = 0;
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_FEEDBACK_ITEMS_H_
