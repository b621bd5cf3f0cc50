// DenseModel: the Model for a dense learner chosen as the model's optimizer
// (optimizer "ada_fd", "ada_full", "metagrad", ...): one weight vector over
// the hashed sparse features folded into 2^bits slots (hashing.bits in
// 1..16; a key is its slot) followed by the dense namespaces, all learned by
// the DenseOptimizer of config.dense_optimizer. This is how the seeds'
// full-matrix and sketched learners run on the same logs as the
// per-coordinate ones (`clickctl replay --optimizer=ada_fd --bits=10`).
//
// Thread safety: safe for concurrent access. Reads take the dense block's
// reader lock; a learning step (margin, then update) holds the model's
// learn lock throughout, so steps are atomic and serialize.
#ifndef CLICKD_CORE_MODEL_DENSE_MODEL_H_
#define CLICKD_CORE_MODEL_DENSE_MODEL_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/model/model.h"

namespace clickd {

// The largest hashing.bits a DenseModel takes: 2^16 slots.
inline constexpr int kMaxDenseModelBits = 16;

class DenseModel final : public Model {
 public:
  explicit DenseModel(ModelConfig config) : Model(std::move(config)) {}

  double Margin(absl::Span<const HashedFeature> features) const override;
  // Under the learn lock (shared): no step lands between two lists.
  void Margins(absl::Span<const absl::Span<const HashedFeature>> lists,
               absl::Span<double> out) const override;
  // NaN ("not available"): a dense learner (a full matrix, a sketch) has no
  // rate per coordinate to sum.
  double Uncertainty(absl::Span<const HashedFeature> features) const override;
  // w[key] of the folded slot, 0 for a key beyond the slots (as Margin
  // skips it); under the learn lock (shared), as Margins.
  void Weights(absl::Span<const HashedFeature> features, absl::Span<double> out) const override;
  double LearnWithDense(absl::Span<const HashedFeature> features, const Eigen::VectorXd* dense,
                        double label, double importance) override;
  ModelStats Stats() const override;
  uint64_t Updates() const override;
  State ExportState() const override;
  // Copies the whole state at once, as ExportState does: it is all the dense
  // block's, with no per-coordinate store to copy on write.
  std::unique_ptr<StateCopy> BeginStateCopy() const override;
  absl::Status ImportState(const State& state) override;
  std::string SerializeState() const override;

 private:
  mutable Mutex learn_mu_;
  RoundContext round_ ABSL_GUARDED_BY(learn_mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_DENSE_MODEL_H_
