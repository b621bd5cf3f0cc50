#include "core/feedback/feedback_loop.h"

#include <algorithm>
#include <utility>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/feedback/delayed_feedback.h"
#include "core/optim/loss.h"
#include "xxhash.h"

namespace clickd {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;

using Policy = FeedbackConfig::Policy;

bool FakeNegatives(Policy policy) {
  return policy == Policy::kFakeNegative || policy == Policy::kFakeNegativeWeighted;
}

bool IsClick(double label) { return label == 1.0; }

}  // namespace

uint16_t FeedbackLoop::ModelTag(std::string_view model_name) {
  // A fixed seed: the tag is part of every id a caller holds, so it must
  // not change between builds or machines.
  return static_cast<uint16_t>(XXH3_64bits_withSeed(model_name.data(), model_name.size(), 0x1d5));
}

FeedbackLoop::FeedbackLoop(const ModelConfig& config)
    : config_(config.feedback),
      model_tag_(config.feedback.id_tag != 0 ? config.feedback.id_tag : ModelTag(config.name)),
      tag_bits_(config.feedback.id_tag != 0 ? 24 : 16),
      buffer_(std::make_unique<JoinBuffer>(BufferOptions())) {}

JoinBuffer::Options FeedbackLoop::BufferOptions() const {
  JoinBuffer::Options options;
  options.ttl_us = config_.ttl_seconds * kMicrosPerSecond;
  options.max_bytes = config_.max_buffer_bytes;
  options.model_tag = model_tag_;
  options.tag_bits = tag_bits_;
  return options;
}

absl::StatusOr<uint64_t> FeedbackLoop::ReserveIds(
    int64_t now_us, absl::Span<const ImpressionExample> impressions) const {
  if (absl::Status s = buffer_->CheckAdd(now_us, impressions); !s.ok()) return s;
  return buffer_->Stats().next_id;
}

Eigen::VectorXd FeedbackLoop::DenseOf(const Impression& impression) {
  Eigen::VectorXd dense(static_cast<Eigen::Index>(impression.dense.size()));
  for (size_t i = 0; i < impression.dense.size(); ++i) dense[i] = impression.dense[i];
  return dense;
}

void FeedbackLoop::Learn(Model& model, const Impression& impression, double label,
                         double importance) {
  if (impression.dense.empty()) {
    model.LearnWithDense(impression.features, nullptr, label, importance);
    return;
  }
  const Eigen::VectorXd dense = DenseOf(impression);
  model.LearnWithDense(impression.features, &dense, label, importance);
}

double FeedbackLoop::Probability(const Model& model, const Impression& impression) {
  double margin = model.Margin(impression.features);
  if (!impression.dense.empty() && model.dense_block() != nullptr) {
    margin += model.dense_block()->Margin(DenseOf(impression));
  }
  return Sigmoid(margin);
}

void FeedbackLoop::Expire(Model& model, int64_t now_us, FeedbackApplied* applied) {
  buffer_->Expire(now_us, [&](const Impression& impression) {
    ++applied->expired;
    // Under the fake-negative policies the negative was learned at once.
    if (config_.policy == Policy::kWaitDrop) return;
    applied->final_labels.push_back({impression.margin, 0.0f, 1.0f});
    if (config_.policy == Policy::kWaitNegative) {
      Learn(model, impression, 0.0, 1.0);
      ++applied->steps;
    }
  });
}

absl::StatusOr<FeedbackApplied> FeedbackLoop::ApplyImpressions(
    Model& model, int64_t now_us, uint64_t first_id,
    absl::Span<const ImpressionExample> impressions) {
  if (first_id == kIdsAssignedAtApply) {
    absl::StatusOr<uint64_t> reserved = ReserveIds(now_us, impressions);
    if (!reserved.ok()) return reserved.status();
    first_id = *reserved;
  }
  FeedbackApplied applied;
  Expire(model, now_us, &applied);
  absl::StatusOr<uint64_t> first = buffer_->Add(now_us, impressions);
  if (!first.ok()) {
    return absl::DataLossError(absl::StrCat("impressions record does not apply to this model's ",
                                            "join buffer: ", first.status().message()));
  }
  if (*first != first_id) {
    return absl::DataLossError(absl::StrCat("impressions record holds ids from ", first_id,
                                            " but this model's join buffer gives ", *first));
  }
  applied.impressions = impressions.size();
  applied.first_id = first_id;
  if (FakeNegatives(config_.policy)) {
    Impression impression;
    for (const ImpressionExample& example : impressions) {
      impression.features.assign(example.features.begin(), example.features.end());
      impression.dense.assign(example.dense.begin(), example.dense.end());
      const double weight = config_.policy == Policy::kFakeNegativeWeighted
                                ? FnwNegativeWeight(Probability(model, impression))
                                : 1.0;
      Learn(model, impression, 0.0, weight);
      ++applied.steps;
    }
  }
  return applied;
}

FeedbackApplied FeedbackLoop::ApplyFeedback(Model& model, int64_t now_us,
                                            absl::Span<const FeedbackItem> items) {
  FeedbackApplied applied;
  Expire(model, now_us, &applied);
  applied.outcomes.reserve(items.size());
  Impression joined;
  for (const FeedbackItem& item : items) {
    const JoinOutcome outcome = buffer_->Label(item.impression_id, now_us, &joined);
    applied.outcomes.push_back(outcome);
    if (outcome != JoinOutcome::kJoined) continue;
    const double delay_us = static_cast<double>(item.event_time_us - joined.logged_at_us);
    applied.delays_seconds.push_back(std::max(0.0, delay_us / kMicrosPerSecond));
    const bool click = IsClick(item.label);
    applied.final_labels.push_back({joined.margin, click ? 1.0f : 0.0f, item.importance});
    if (!FakeNegatives(config_.policy)) {
      Learn(model, joined, item.label, item.importance);
      ++applied.steps;
    } else if (click) {
      // The negative was learned at the impression; the click adds the
      // positive (with the FNW weight under that policy).
      const double weight = config_.policy == Policy::kFakeNegativeWeighted
                                ? FnwPositiveWeight(Probability(model, joined))
                                : 1.0;
      Learn(model, joined, 1.0, weight * item.importance);
      ++applied.steps;
    }
  }
  return applied;
}

absl::Status FeedbackLoop::RestoreState(std::string_view bytes) {
  auto restored = JoinBuffer::Decode(BufferOptions(), bytes);
  if (!restored.ok()) return restored.status();
  buffer_ = *std::move(restored);
  return absl::OkStatus();
}

}  // namespace clickd
