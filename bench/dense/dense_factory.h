// Builds any of the dense optimizers by name, for the benchmarks
// (bench/dense, bench/seed002). Names are the SerializeState kinds:
// ada_diag, ada_diag_da, ada_full, ada_full_da, ada_fd, ada_fd_da, ons,
// fd_son.
#ifndef CLICKD_BENCH_DENSE_DENSE_FACTORY_H_
#define CLICKD_BENCH_DENSE_DENSE_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/optim/dense/ada_diag.h"
#include "core/optim/dense/ada_fd.h"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/dense_optimizer.h"
#include "core/optim/dense/fd_son.h"
#include "core/optim/dense/ons.h"

namespace clickd::bench {

// tau is ignored by the methods without a sketch; ons and fd_son use the
// default weight_power (1/2, seed 002 section 3.3).
inline absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewDenseOptimizer(const std::string& name,
                                                                         double eta, double delta,
                                                                         int tau, int dim) {
  if (name == "ada_diag") return NewAdaDiag({.eta = eta, .delta = delta}, dim);
  if (name == "ada_diag_da") return NewAdaDiagDa({.eta = eta, .delta = delta}, dim);
  if (name == "ada_full") return NewAdaFull({.eta = eta, .delta = delta}, dim);
  if (name == "ada_full_da") return NewAdaFullDa({.eta = eta, .delta = delta}, dim);
  if (name == "ada_fd") return NewAdaFd({.eta = eta, .delta = delta, .tau = tau}, dim);
  if (name == "ada_fd_da") return NewAdaFdDa({.eta = eta, .delta = delta, .tau = tau}, dim);
  if (name == "ons") return NewOns({.eta = eta, .delta = delta}, dim);
  if (name == "fd_son") return NewFdSon({.eta = eta, .delta = delta, .tau = tau}, dim);
  return absl::InvalidArgumentError(absl::StrCat("unknown dense optimizer \"", name, "\""));
}

// True for the methods whose cost depends on tau.
inline bool UsesTau(const std::string& name) {
  return name == "ada_fd" || name == "ada_fd_da" || name == "fd_son";
}

}  // namespace clickd::bench

#endif  // CLICKD_BENCH_DENSE_DENSE_FACTORY_H_
