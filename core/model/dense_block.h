// DenseBlock: a model's dense features (embeddings, continuous statistics):
// namespaces of fixed dimension declared in the model's config, laid end to
// end into one vector x of dimension D, and one DenseOptimizer over the
// weights of that vector. The model's margin is its sparse part plus
// w . x; one loss gradient feeds both (the dense gradient is dloss * x).
//
// An example carries its dense values as (namespace, values) pairs; a
// namespace it leaves out contributes zeros. Values are checked (declared
// namespace, exact dimension, finite and bounded, each namespace once across an
// impression's context and candidate) before anything is learned.
//
// Thread safety: safe for concurrent access. Margin takes the block's
// reader lock, Update its writer lock; the learner is only touched under
// them.
#ifndef CLICKD_CORE_MODEL_DENSE_BLOCK_H_
#define CLICKD_CORE_MODEL_DENSE_BLOCK_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/features/example.h"
#include "core/features/hasher.h"
#include "core/model/model_config.h"
#include "core/optim/dense/dense_optimizer.h"
#include "core/optim/dense/dense_optimizer_config.h"

namespace clickd {

class DenseBlock {
 public:
  // `sparse_slots` leading dimensions come before the namespaces: the folded
  // hashed features of a DenseModel (core/model/dense_model.h); 0 otherwise.
  static absl::StatusOr<std::unique_ptr<DenseBlock>> Create(
      const std::vector<DenseNamespace>& namespaces, const DenseOptimizerConfig& optimizer,
      int sparse_slots = 0);

  int dim() const { return dim_; }
  int sparse_slots() const { return sparse_slots_; }

  // sum value * w[key] over features whose keys are below sparse_slots().
  double SparseMargin(absl::Span<const HashedFeature> features) const;

  // Adds the features (keys below sparse_slots()) into x[key].
  void PlaceSparse(absl::Span<const HashedFeature> features, Eigen::VectorXd* x) const;

  // Checks the dense values of an example (and of its context, if any):
  // every namespace declared, its values exactly its dimension, finite and
  // within kMaxDenseValue (core/optim/numeric_bounds.h), no namespace twice. Errors name
  // <field>.dense[i] (context_field for the context's) and the limit.
  absl::Status Check(const Example* context, std::string_view context_field, const Example& example,
                     std::string_view field) const;

  // x for a checked example: zeros where it gives no values. False if the
  // example (and context) have no dense values at all.
  bool Assemble(const Example* context, const Example& example, Eigen::VectorXd* x) const;

  double Margin(const Eigen::VectorXd& x) const;

  // The dense margin of one checked example's own values, without
  // assembling x: the margin is linear, so Predict adds a context's part
  // (computed once) and each candidate's.
  double MarginOf(const Example& example) const;

  // One step of the learner on the loss gradient dloss * x.
  void Update(const Eigen::VectorXd& x, double dloss);

  // The learner's state (DenseOptimizer::SerializeState) and its inverse.
  std::string SerializeState() const;
  absl::Status RestoreState(std::string_view bytes);
  uint64_t StateBytes() const;

 private:
  DenseBlock(const std::vector<DenseNamespace>& namespaces, int sparse_slots,
             std::unique_ptr<DenseOptimizer> learner);
  void Place(const Example& example, Eigen::VectorXd* x) const;

  struct Slot {
    int offset;
    int dim;
  };
  absl::flat_hash_map<std::string, Slot> slots_;  // immutable after construction
  int sparse_slots_ = 0;
  int dim_ = 0;
  mutable Mutex mu_;
  const std::unique_ptr<DenseOptimizer> learner_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_DENSE_BLOCK_H_
