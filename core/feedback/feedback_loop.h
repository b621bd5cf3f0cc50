// FeedbackLoop: a model's impression-to-click loop (issue 15,
// docs/feedback.md). It owns the model's JoinBuffer and decides what the
// model learns from each impression, by the model's FeedbackConfig policy:
//
//   policy                  at the impression      at its label          at its TTL, unlabelled
//   wait_negative (default) -                      label, importance     a negative, importance 1
//   wait_drop               -                      label, importance     nothing
//   fake_negative           a negative, 1          a click: a positive   nothing
//   fake_negative_weighted  a negative, (1-p)(1+p) a click: (1+p) x imp. nothing
//
// (p: the model's probability just before that step; Ktena et al. 2019,
// core/feedback/delayed_feedback.h.) Under the wait policies a joined label
// is learned exactly as an Update of the same features with that label and
// importance would be.
//
// The loop is applied from records, each with the time it happened at (the
// writer's clock, carried in the update log): the same records applied to
// the same state give the same model, ids and expiries, so a restart
// (snapshot + log) and every replica rebuild the same loop. Every record
// first expires what is due at its time; a feedback record without items
// is a tick of that clock.
//
// Thread safety: one writer at a time (the caller serializes ReserveIds and
// the Apply calls with its learning: the journal's learn lock, or the
// served model's); buffer().Stats() may be read concurrently.
#ifndef CLICKD_CORE_FEEDBACK_FEEDBACK_LOOP_H_
#define CLICKD_CORE_FEEDBACK_FEEDBACK_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/eval/metrics.h"
#include "core/feedback/join_buffer.h"
#include "core/model/model.h"

namespace clickd {

// The first_id of an impressions record whose ids are given when it is
// applied (ApplyImpressions). No impression ever gets this id: the buffer
// never issues the last counter (join_buffer.h).
inline constexpr uint64_t kIdsAssignedAtApply = ~uint64_t{0};

// A label for an impression, as Feedback carries it.
struct FeedbackItem {
  uint64_t impression_id = 0;
  float label = 0;
  float importance = 1;
  int64_t event_time_us = 0;  // when the click happened, as the caller says
};

// What applying one record did.
struct FeedbackApplied {
  std::vector<JoinOutcome> outcomes;  // one per feedback item, in order
  // For the progressive metrics: each impression whose final label became
  // known (joined, or expired as a negative under wait_negative), scored by
  // the margin Predict served for it, with that label and importance.
  std::vector<ScoredExample> final_labels;
  // The label delay of each joined item (event time - impression time),
  // in seconds; negative delays count as 0.
  std::vector<double> delays_seconds;
  uint64_t steps = 0;    // learning steps taken
  uint64_t expired = 0;  // impressions that reached their TTL unlabelled
  // An impressions record's: how many it logged, and the first one's id.
  uint64_t impressions = 0;
  uint64_t first_id = 0;
};

class FeedbackLoop {
 public:
  // For a model whose config.feedback is enabled().
  explicit FeedbackLoop(const ModelConfig& config);
  FeedbackLoop(const FeedbackLoop&) = delete;
  FeedbackLoop& operator=(const FeedbackLoop&) = delete;

  // The top 16 bits of the impression ids of a model created before
  // per-incarnation tags (FeedbackConfig::id_tag 0): from its name, so that
  // an id of another model is recognised (JoinOutcome::kOtherModel).
  static uint16_t ModelTag(std::string_view model_name);

  const FeedbackConfig& config() const { return config_; }
  const JoinBuffer& buffer() const { return *buffer_; }

  // The id the first of `impressions` would get at `now_us`, if the buffer
  // can take them once what is due has expired (JoinBuffer::CheckAdd:
  // RESOURCE_EXHAUSTED naming the budget, or ids run out, otherwise).
  // Changes nothing: the caller logs the record, then applies it, which
  // then cannot fail.
  absl::StatusOr<uint64_t> ReserveIds(int64_t now_us,
                                      absl::Span<const ImpressionExample> impressions) const;

  // Applies an impressions record: expiry at `now_us`, then the impressions
  // (which must get ids from `first_id` on: DataLoss otherwise, for a log
  // that does not belong to this state), then the policy's steps.
  //
  // `first_id` kIdsAssignedAtApply: a record of the replicated log, whose
  // publisher cannot know the ids (other replicas publish too); they are
  // the buffer's next ones, and a buffer that cannot take the impressions
  // refuses the record as ReserveIds would, changing nothing. Every replica
  // applies the same records to the same state, so all give the same ids
  // and refuse the same records.
  absl::StatusOr<FeedbackApplied> ApplyImpressions(Model& model, int64_t now_us, uint64_t first_id,
                                                   absl::Span<const ImpressionExample> impressions);

  // Applies a feedback record: expiry at `now_us`, then each item's label
  // (items checked by the caller: labels in the loss's domain, importances
  // in range).
  FeedbackApplied ApplyFeedback(Model& model, int64_t now_us, absl::Span<const FeedbackItem> items);

  // The buffer's bytes for a snapshot, and back (DataLoss for damage,
  // leaving the loop as it was).
  std::string EncodeState() const { return buffer_->Encode(); }
  absl::Status RestoreState(std::string_view bytes);

 private:
  JoinBuffer::Options BufferOptions() const;
  void Expire(Model& model, int64_t now_us, FeedbackApplied* applied);
  // An impression's dense values as the model takes them.
  static Eigen::VectorXd DenseOf(const Impression& impression);
  // One step on an impression's features and dense values.
  static void Learn(Model& model, const Impression& impression, double label, double importance);
  static double Probability(const Model& model, const Impression& impression);

  const FeedbackConfig config_;
  const uint32_t model_tag_;
  const int tag_bits_;
  std::unique_ptr<JoinBuffer> buffer_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FEEDBACK_FEEDBACK_LOOP_H_
