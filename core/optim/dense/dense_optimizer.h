// DenseOptimizer: an online learner over one dense weight vector of fixed
// dimension d, for a model's dense feature block (embeddings, continuous
// statistics) and for the seed papers' dense experiments.
//
// The protocol is the online convex optimization loop of seeds 002 and 003:
// read weights() (the point w_t played in round t), observe the loss
// gradient g_t at w_t, call Update(g_t) to move to w_{t+1}.
//
// Thread safety: none; the owner serializes calls (a model holds its dense
// block's lock around them).
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "Eigen/Core"
#include "absl/status/status.h"

namespace clickd {

class DenseOptimizer {
 public:
  virtual ~DenseOptimizer() = default;

  virtual int dim() const = 0;

  // The weights w_t to predict with in the current round.
  virtual const Eigen::VectorXd& weights() const = 0;

  // One round: g is the loss gradient at weights(), of size dim().
  virtual void Update(const Eigen::VectorXd& g) = 0;

  // Rounds played so far.
  virtual uint64_t rounds() const = 0;

  // The whole learned state as bytes (little-endian doubles and integers,
  // layout private to each optimizer). RestoreState(SerializeState()) on an
  // optimizer built with the same parameters and dimension continues
  // bit-identically; equal bytes mean equal learners.
  virtual std::string SerializeState() const = 0;

  // Replaces the state; InvalidArgument or DataLoss (naming what does not
  // fit) if `bytes` did not come from an optimizer of this kind and size.
  // On error the state is unchanged.
  virtual absl::Status RestoreState(std::string_view bytes) = 0;

  // Memory held by the learner's state, in bytes (for Stats and benchmarks).
  virtual uint64_t StateBytes() const = 0;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_H_
