#include "bench/seed002/regression_data.h"

#include <cmath>
#include <random>

#include "Eigen/QR"

namespace clickd::seed002 {

RegressionData MakeRegressionData(const RegressionConfig& c) {
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> normal;
  RegressionData data;
  data.beta_star.resize(c.d);
  for (int i = 0; i < c.d; ++i) data.beta_star(i) = normal(rng);
  data.beta_star /= data.beta_star.norm();

  Eigen::MatrixXd q = Eigen::MatrixXd::Identity(c.d, c.d);
  if (c.random_basis) {
    Eigen::MatrixXd a(c.d, c.d);
    for (int j = 0; j < c.d; ++j) {
      for (int i = 0; i < c.d; ++i) a(i, j) = normal(rng);
    }
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
    q = qr.householderQ();
    // Q diag(sign(R_jj)) is Haar-distributed.
    for (int j = 0; j < c.d; ++j) {
      if (qr.matrixQR()(j, j) < 0) q.col(j) *= -1;
    }
  }
  Eigen::VectorXd root(c.d);
  for (int j = 0; j < c.d; ++j) root(j) = std::sqrt(c.lambda0 * std::pow(j + 1.0, -c.alpha));
  const Eigen::MatrixXd factor = q * root.asDiagonal();  // Sigma = factor factor^T

  data.x.resize(c.d, c.T);
  data.y.resize(c.T);
  Eigen::VectorXd z(c.d);
  for (int t = 0; t < c.T; ++t) {
    for (int i = 0; i < c.d; ++i) z(i) = normal(rng);
    data.x.col(t) = Eigen::VectorXd::Ones(c.d) + factor * z;
    data.y(t) = data.beta_star.dot(data.x.col(t));
  }
  return data;
}

}  // namespace clickd::seed002
