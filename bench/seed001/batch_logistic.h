// A batch solver for the comparator of seed 001's regret: the best fixed
// model in hindsight,
//   min over w in [-R, R]^n of  sum_t log(1 + exp(-y_t w . x_t)),
// on the same hashed features the online learners saw.
//
// Cyclic coordinate descent with a projected Newton step and Armijo
// backtracking per coordinate (CDN, Chang, Hsieh & Lin 2008, JMLR 9): each
// coordinate step can only lower the objective, so the loss decreases
// monotonically, and a sweep's total decrease is the convergence measure.
// Plain values and functions; not synchronized.
#ifndef CLICKD_BENCH_SEED001_BATCH_LOGISTIC_H_
#define CLICKD_BENCH_SEED001_BATCH_LOGISTIC_H_

#include <cstdint>
#include <vector>

#include "bench/seed001/synthetic_data.h"
#include "core/model/model.h"

namespace clickd::seed001 {

struct BatchOptions {
  double radius = 1.0;
  int max_sweeps = 500;
  // Stops once a sweep lowers the total loss by less than this (absolute).
  double tolerance = 1e-4;
  // Starts from this model's weights (clipped to the box) instead of 0. The
  // optimum is the same; a good start only saves sweeps.
  const Model* warm_start = nullptr;
};

struct BatchResult {
  double loss = 0;           // total loss at the solution
  int sweeps = 0;            // sweeps run
  double last_decrease = 0;  // total-loss decrease of the last sweep
  // Largest |projected gradient| over coordinates: 0 exactly at the optimum.
  double max_projected_gradient = 0;
  uint64_t coordinates = 0;
  std::vector<double> example_losses;  // loss of each example at the solution
};

// Solves the problem over the first `prefix` examples of `data`.
BatchResult SolveBoxLogistic(const SyntheticData& data, size_t prefix, const BatchOptions& options);

}  // namespace clickd::seed001

#endif  // CLICKD_BENCH_SEED001_BATCH_LOGISTIC_H_
