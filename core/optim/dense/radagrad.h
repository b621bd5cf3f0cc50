// RADAGRAD (Krummenacher, McWilliams, Kilcher, Buhmann & Meinshausen 2016),
// the randomized approximation of ADA-FULL that seed 002 (Wan, Wei & Zhang)
// compares ADA-FD against in section 4. Implemented as seed 002 states it in
// eq. (4), composite mirror descent with phi = 0:
//   g~_t = Pi g_t                                  random projection
//   G~_t = G~_{t-1} + g_t g~_t^T                   d x tau
//   Q_t R_t = G~_t                                 thin QR
//   B = G~_t^T Q_t,  U Sigma W^T = B               SVD, tau x tau
//   V = Q_t W,  gamma_t = eta (g_t - V V^T g_t)
//   beta_{t+1} = beta_t - eta V (Sigma^{1/2} + delta I)^{-1} V^T g_t - gamma_t
// from beta_1 = 0, G~_0 = 0, with Pi the tau x d subsampled randomized
// Hadamard transform of radagrad_srht.h, drawn once from `seed`. V's columns
// are the left singular vectors of G~_t (B = R_t^T), so the first term is an
// ADA-FULL-like step inside the subspace the projection captured and
// gamma_t a plain gradient step of size eta outside it.
//
// Our choices where the seed is terse:
// - The seed updates Q_t, R_t by rank-one qr_update; we recompute the thin
//   Householder QR of G~_t every round instead. Both cost O(tau^2 d) per
//   round (the SVD's V = Q W is O(tau^2 d) either way), and the recompute
//   avoids the loss of orthogonality a long chain of updates can build up.
// - While G~_t has rank below tau (the first tau - 1 rounds, or gradients
//   in a smaller subspace), Q_t still has tau orthonormal columns and B has
//   zero singular values; their columns of V are orthogonal to every g_i
//   seen, so they contribute (0 + delta)^{-1} times ~0 and nothing is NaN.
//   Only if Pi loses rank on the gradients seen (rank G~_t below the rank
//   of g_1..g_t, itself below tau: Pi g_t = 0, say; probability zero for
//   continuous data) can g_t reach those columns; its step there
//   is then eta/delta along whichever orthonormal completion the QR picks,
//   still finite.
//
// Not a model optimizer: RADAGRAD is a heuristic without a regret guarantee
// (seed 002, section 2) and lives here only for the seed 002 reproduction
// (bench/seed002); the service's optimizer config does not offer it.
//
// State: G~_t, beta_t and the round count. SerializeState does not write Pi:
// RestoreState needs an optimizer built with the same parameters, which
// regenerates the same Pi from the seed; the bytes carry the seed so that
// bytes from another seed are refused rather than continued under another
// projection.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_RADAGRAD_H_
#define CLICKD_CORE_OPTIM_DENSE_RADAGRAD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "Eigen/Core"
#include "Eigen/QR"
#include "Eigen/SVD"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"
#include "core/optim/dense/radagrad_srht.h"

namespace clickd {

// Defaults are a starting point, not tuned values (seed 002 searches eta
// and delta over {1e-4, ..., 100}, tau = 10, and averages RADAGRAD over 5
// runs); they are pinned in radagrad_test.cc.
struct RadagradParams {
  double eta = 0.1;    // step size, > 0
  double delta = 1.0;  // added to Sigma^{1/2}, > 0
  int tau = 10;        // projection rows, in [1, dim]
  uint64_t seed = 1;   // draws Pi
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; dim in [1, Srht::kMaxDim]; tau in [1, dim].
absl::Status ValidateRadagradParams(const RadagradParams& params, int dim);

class Radagrad final : public DenseOptimizer {
 public:
  // SerializeState kind "radagrad".
  static absl::StatusOr<std::unique_ptr<Radagrad>> Create(const RadagradParams& params, int dim);

  int dim() const override { return static_cast<int>(weights_.size()); }
  const Eigen::VectorXd& weights() const override { return weights_; }
  uint64_t rounds() const override { return rounds_; }
  void Update(const Eigen::VectorXd& g) override;
  std::string SerializeState() const override;
  absl::Status RestoreState(std::string_view bytes) override;
  uint64_t StateBytes() const override;

  // Pi, for tests.
  const Srht& projection() const { return projection_; }

 private:
  Radagrad(const RadagradParams& params, int dim);

  const RadagradParams params_;
  const Srht projection_;
  Eigen::MatrixXd g_tilde_;  // G~_t, d x tau
  Eigen::VectorXd weights_;
  uint64_t rounds_ = 0;
  // Per-round buffers, kept to avoid reallocating them every round.
  Eigen::HouseholderQR<Eigen::MatrixXd> qr_;
  Eigen::MatrixXd q_;  // thin Q_t, d x tau
  Eigen::MatrixXd b_;  // B, tau x tau
  Eigen::JacobiSVD<Eigen::MatrixXd> svd_;
  Eigen::MatrixXd v_;  // V, d x tau
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_RADAGRAD_H_
