// VariantModel: a model whose examples are learned by several variants side
// by side (McMahan et al. 2013, "Ad Click Prediction", section 4.4,
// "training many similar models", and section 6 on evaluating them): the
// model's own optimizer (the variant named kPrimaryVariant) and up to
// kMaxVariants others (ModelConfig::variants), each with its own
// coordinates. Every example is hashed once and learned by every variant,
// each scoring it before its own step, so each variant has exact
// progressive metrics on the same stream.
//
// The champion. Predict serves one variant, the champion, chosen by the
// progressive loss of recent examples with a rule that does not flap
// (docs/variants.md):
//   - each variant keeps an exponentially weighted mean of its progressive
//     loss with a half-life of kSelectionHalfLife examples (importance
//     weighted), and the lifetime mean;
//   - after each learned example, a challenger replaces the champion only if
//     its recent loss is below the champion's by more than kSelectionMinGain
//     (relative), and at least kSelectionHalfLife examples have been learned
//     since the last change (and since the start).
// The rule reads only the stream (no clock), so two models that learn the
// same examples in the same order choose the same champion: a restored
// snapshot, a replay and every replica agree. Its state is part of the
// model's state (Model::State::selection).
//
// Thread safety: as Model. The selection has its own lock, held for a few
// comparisons per example; the champion is read once per Margins call, so
// a Predict's candidates are all scored by one variant.
#ifndef CLICKD_CORE_MODEL_VARIANT_MODEL_H_
#define CLICKD_CORE_MODEL_VARIANT_MODEL_H_

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/model/model.h"

namespace clickd {

inline constexpr double kSelectionHalfLife = 10000;  // examples
inline constexpr double kSelectionMinGain = 0.01;    // 1 % lower recent loss

// One variant's figures, for ModelInfo, /metrics and the status page.
struct VariantReport {
  std::string name;
  std::string optimizer;
  bool champion = false;
  uint64_t examples = 0;   // examples learned
  double loss = 0;         // lifetime mean progressive loss (NaN before any)
  double recent_loss = 0;  // exponentially weighted, kSelectionHalfLife (NaN before any)
  uint64_t coordinates = 0;
  uint64_t bytes = 0;
};

class VariantModel final : public Model {
 public:
  // `members`: the primary first (built from `config` without variants),
  // then one per config.variants entry, in order.
  VariantModel(ModelConfig config, std::vector<std::unique_ptr<Model>> members);

  // The champion's margins.
  double Margin(absl::Span<const HashedFeature> features) const override;
  void Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
               absl::Span<double> out) const override;
  // The champion's (a factorized champion adds its pairwise terms; the
  // champion is read once per call, so every candidate is scored by one).
  void SharedContextMargins(absl::Span<const absl::Span<const HashedFeature>> lists,
                            absl::Span<double> out) const override;
  void FactorPairs(absl::Span<const HashedFeature> features,
                   std::vector<PairContribution>* out) const override;
  // The champion's, like Margin (the champion is read once per call; to pin
  // one variant across calls, take it from ModelForVariant).
  double Uncertainty(absl::Span<const HashedFeature> features) const override;
  void Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const override;

  // Every variant learns the example; returns the margin of the variant
  // that was champion before the step (what Predict would have served).
  double LearnWithDense(absl::Span<const HashedFeature> features, const Eigen::VectorXd* dense,
                        double label, double importance) override;
  // Every member's room.
  void ReserveFor(absl::Span<const HashedFeature> features) override {
    for (const auto& member : members_) member->ReserveFor(features);
  }

  // Updates: examples learned (the primary's); coordinates and bytes: all
  // variants together (what the model costs).
  ModelStats Stats() const override;
  uint64_t Updates() const override { return members_.front()->Updates(); }

  State ExportState() const override;
  std::unique_ptr<StateCopy> BeginStateCopy() const override;
  // DataLoss, changing nothing, unless the state has one entry per variant
  // of this model's sizes and a selection state this build reads.
  absl::Status ImportState(const State& state) override;
  std::string SerializeState() const override;

  // The variant named `name` (kPrimaryVariant: the model's own optimizer),
  // or null.
  const Model* Variant(std::string_view name) const;
  // The champion's name.
  std::string_view Champion() const;
  std::vector<VariantReport> Reports() const;

 private:
  // Per variant: the running progressive loss sums.
  struct Score {
    uint64_t examples = 0;
    double weight = 0, loss = 0;                // lifetime, importance weighted
    double recent_weight = 0, recent_loss = 0;  // exponentially weighted
  };
  // The recent mean loss of a score, NaN before any weight.
  static double RecentLoss(const Score& s) {
    return s.recent_weight > 0 ? s.recent_loss / s.recent_weight
                               : std::numeric_limits<double>::quiet_NaN();
  }
  struct Selection {
    std::vector<Score> scores;
    uint32_t champion = 0;
    uint64_t since_change = 0;  // examples learned since the last change (or the start)
  };

  // Adds one example's per-variant losses and applies the rule.
  void Select(absl::Span<const double> losses, double importance);
  std::string EncodeSelection() const;

  const std::vector<std::unique_ptr<Model>> members_;
  std::vector<std::string> names_;
  const double recent_decay_;  // per example: 2^(-1 / kSelectionHalfLife)
  std::atomic<uint32_t> champion_{0};
  mutable Mutex selection_mu_;
  Selection selection_ ABSL_GUARDED_BY(selection_mu_);
};

// Which model scores a Predict: for a model with variants, the variant
// named `variant`, or the champion when it is empty (read once, so every
// candidate of a request is scored by the same variant); for any other
// model, the model itself when `variant` is empty. InvalidArgument naming
// the field otherwise.
struct ScoringModel {
  const Model* model;
  std::string_view variant;  // empty for a model without variants
};
absl::StatusOr<ScoringModel> ModelForVariant(const Model& model, std::string_view variant);

// Decodes Model::State::selection for `variants` variants (the primary
// included): DataLoss naming what is wrong. For tests and the fuzzer.
absl::Status CheckSelectionState(std::string_view bytes, size_t variants);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_VARIANT_MODEL_H_
