#include "core/optim/dense/dense_fd_sketch.h"

#include <algorithm>
#include <cmath>

#include "core/optim/dense/dense_state_codec.h"

namespace clickd {

FdSketch::FdSketch(int tau, int dim)
    : s_(Eigen::MatrixXd::Zero(tau, dim)), gram_(tau, tau), eig_(tau) {
  svd_.vt = Eigen::MatrixXd::Zero(tau, dim);
  svd_.sigma = Eigen::VectorXd::Zero(tau);
}

const FdSketch::Svd& FdSketch::Insert(const Eigen::VectorXd& row) {
  const Eigen::Index tau = s_.rows();
  s_.row(tau - 1) = row.transpose();  // step 4
  // Step 5 via K = S S^T = U Sigma^2 U^T. Eigen sorts eigenvalues
  // ascending; reversing the columns puts Sigma in the paper's descending
  // order, so Sigma_{tau,tau} (the last) is the smallest.
  gram_.noalias() = s_ * s_.transpose();
  eig_.compute(gram_);
  const Eigen::VectorXd sigma2 = eig_.eigenvalues().reverse();
  const double floor = kRelativeFloor * std::max(sigma2(0), 0.0);
  svd_.shrink = sigma2(tau - 1) <= floor ? 0.0 : sigma2(tau - 1);
  svd_.vt.noalias() = eig_.eigenvectors().rowwise().reverse().transpose() * s_;  // Sigma V^T
  for (Eigen::Index i = 0; i < tau; ++i) {
    if (sigma2(i) <= floor || i == tau - 1) {
      // Round-off, or the smallest direction, which the shrink removes
      // (Sigma'_{tau,tau} = 0 exactly).
      svd_.vt.row(i).setZero();
      svd_.sigma(i) = 0;
      continue;
    }
    svd_.vt.row(i) /= std::sqrt(sigma2(i));
    svd_.sigma(i) = std::sqrt(std::max(sigma2(i) - svd_.shrink, 0.0));  // step 6
  }
  s_.noalias() = svd_.sigma.asDiagonal() * svd_.vt;
  return svd_;
}

absl::Status FdSketch::CheckRestorable(const Eigen::MatrixXd& s) {
  if (s.rows() > 0 && !s.row(s.rows() - 1).isZero(0)) {
    return absl::DataLossError("sketch state: S's last row is not zero");
  }
  return absl::OkStatus();
}

uint64_t FdSketch::HeapBytes() const {
  return dense_state::HeapBytes(s_) + dense_state::HeapBytes(svd_.vt) +
         dense_state::HeapBytes(svd_.sigma) + 3 * dense_state::HeapBytes(gram_);
}

Eigen::VectorXd ApplyWoodburyInverse(const Eigen::MatrixXd& vt, const Eigen::VectorXd& spectrum,
                                     double delta, const Eigen::VectorXd& v) {
  const Eigen::VectorXd weight = (spectrum.array() / (delta + spectrum.array())).matrix();
  const Eigen::VectorXd coords = vt * v;  // V^T v
  return (v - vt.transpose() * weight.cwiseProduct(coords)) / delta;
}

}  // namespace clickd
