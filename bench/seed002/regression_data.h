// The synthetic online regression stream of seed 002 section 4.1 (Wan, Wei
// & Zhang): f_t(beta) = |beta^T x_t - y_t|, y_t = beta_*^T x_t, beta_* a
// N(0, I) draw normalised to unit length, x_t ~ N(mu, Sigma) with mu = 1
// (all ones) and Sigma's eigenvalues lambda_j = lambda0 j^{-alpha}.
//
// Our choices where the paper is silent: Sigma's eigenvectors are a
// Haar-random orthogonal basis (QR of a Gaussian matrix, signs fixed), or
// the coordinate axes with --basis=identity; x_t = mu + Q diag(lambda)^{1/2}
// z_t with z_t ~ N(0, I); everything is drawn from one std::mt19937_64
// seeded by `seed`, in the order beta_hat, Q, then x_1..x_T. The stream is
// i.i.d., so its order is the "same permutation" for every algorithm.
#ifndef CLICKD_BENCH_SEED002_REGRESSION_DATA_H_
#define CLICKD_BENCH_SEED002_REGRESSION_DATA_H_

#include <cstdint>

#include "Eigen/Core"

namespace clickd::seed002 {

struct RegressionConfig {
  int d = 500;
  int T = 10000;
  double lambda0 = 100;
  double alpha = 2;
  bool random_basis = true;
  uint64_t seed = 1;
};

struct RegressionData {
  Eigen::MatrixXd x;          // d x T, column t is x_{t+1}
  Eigen::VectorXd y;          // T
  Eigen::VectorXd beta_star;  // d, unit length
};

RegressionData MakeRegressionData(const RegressionConfig& config);

// The absolute loss at beta in round t (0-based) and its subgradient's
// sign: g_t = s x_t with s = +1 where beta^T x_t >= y_t, else -1 (at the
// kink any s in [-1, 1] is a subgradient; +1 keeps |s| = 1).
struct LossAndSign {
  double loss;
  double sign;
};
inline LossAndSign AbsoluteLoss(const RegressionData& data, int t, const Eigen::VectorXd& beta) {
  const double r = beta.dot(data.x.col(t)) - data.y(t);
  return {r >= 0 ? r : -r, r >= 0 ? 1.0 : -1.0};
}

}  // namespace clickd::seed002

#endif  // CLICKD_BENCH_SEED002_REGRESSION_DATA_H_
