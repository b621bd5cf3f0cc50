// Frequent directions (Ghashami et al. 2016) in the one-row form of seed 002
// (Wan, Wei & Zhang), section 2 and steps 4-6 of its Algorithms 1 and 2:
// the sketch S is tau x d, its last row is zero between steps, and each
// step
//   4: writes the new row into the last row of S_{t-1},
//   5: computes the SVD U Sigma V^T of that matrix and
//      sigma_t = Sigma_{tau,tau}^2, its smallest squared singular value,
//   6: shrinks, S_t = Sigma' V^T with Sigma' = sqrt(Sigma^2 - sigma_t I),
// which zeroes the last row again (Sigma'_{tau,tau} = 0). S_t^T S_t
// approximates the sum of the rows' outer products from below; it is exact
// while the rows span fewer than tau dimensions (every sigma_t = 0).
//
// Reconstructed from the extracted text: Algorithms 1 and 2 print
// "Sigma' = sqrt(Sigma^2 sigma_t I_tau)" and "sigma_t = Sigma_tt^2"; the
// minus sign and the index tau are those of the frequent-directions update
// the paper states in section 2 (line ~77: B = sqrt(Sigma^2 - sigma I) V^T,
// sigma = Sigma_{tau tau}^2) and of eqs. (6)-(7).
//
// The SVD goes through the tau x tau Gram matrix K = S S^T = U Sigma^2 U^T,
// then V^T = Sigma^{-1} U^T S: O(tau^2 d) time, O(tau d) memory, no d x d
// matrix. Squaring halves the digits of the small singular values, so a
// direction whose Sigma_i^2 is below kRelativeFloor of the largest is taken
// as zero (its V row would be round-off) and dropped.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_FD_SKETCH_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_FD_SKETCH_H_

#include <cstdint>
#include <utility>

#include "Eigen/Core"
#include "Eigen/Eigenvalues"
#include "absl/status/status.h"

namespace clickd {

class FdSketch {
 public:
  static constexpr double kRelativeFloor = 1e-12;

  // The shrunk sketch's SVD from the last Insert: S_t = diag(sigma) vt.
  // Rows of vt are orthonormal where sigma > 0 and zero where sigma = 0;
  // sigma is in descending order and sigma(tau - 1) = 0.
  struct Svd {
    Eigen::MatrixXd vt;     // V^T, tau x d
    Eigen::VectorXd sigma;  // diag(Sigma'), tau
    double shrink = 0;      // sigma_t
  };

  FdSketch(int tau, int dim);  // S_0 = 0

  // Steps 4-6 above for one new row of size dim.
  const Svd& Insert(const Eigen::VectorXd& row);

  // S_t, tau x d. Its last row is zero.
  const Eigen::MatrixXd& sketch() const { return s_; }

  // DataLoss unless `s` can be a sketch between steps: its last row zero.
  // Size is checked by the state reader.
  static absl::Status CheckRestorable(const Eigen::MatrixXd& s);

  // Replaces S (for RestoreState), after CheckRestorable.
  void set_sketch(Eigen::MatrixXd s) { s_ = std::move(s); }

  // Sketch plus the per-step buffers kept between steps.
  uint64_t HeapBytes() const;

 private:
  Eigen::MatrixXd s_;
  Svd svd_;
  Eigen::MatrixXd gram_;  // S S^T, tau x tau
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig_;
};

// Returns (delta I + V diag(spectrum) V^T)^{-1} v, with V^T = vt (rows
// orthonormal, or zero where spectrum is 0), by the Woodbury formula as seed
// 002 applies it (section 3.1, line ~114):
//   (1/delta) (v - V (delta I + D)^{-1} D V^T v),  D = diag(spectrum).
// O(tau d). ADA-FD passes D = Sigma', FD-SON D = Sigma'^2.
Eigen::VectorXd ApplyWoodburyInverse(const Eigen::MatrixXd& vt, const Eigen::VectorXd& spectrum,
                                     double delta, const Eigen::VectorXd& v);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_FD_SKETCH_H_
