// The random projection of RADAGRAD (radagrad.h): a subsampled randomized
// Hadamard transform (SRHT), the tau x d matrix
//   Pi = sqrt(d'/tau) P H D
// where D is a diagonal of random signs, H the normalized Walsh-Hadamard
// matrix of order d' (d padded with zeros to the next power of two, so
// H^T H = I), and P keeps tau of H's d' rows, sampled without replacement.
// The scaling makes E[Pi^T Pi] = I on the first d coordinates. Applying Pi
// takes one fast Walsh-Hadamard transform, O(d' log d'), and no d' x d'
// matrix.
//
// Seed 002 names Krummenacher et al.'s projection a subsampled randomized
// *Fourier* transform; we use the real Hadamard variant (the same family,
// real arithmetic, no complex outputs to map back to R^tau).
//
// The draw is defined by raw std::mt19937_64 outputs only (the engine's
// output sequence is fixed by the C++ standard; the std:: distributions are
// not), so a seed gives the same Pi on every platform: first the d signs
// (bit 63 of one output each), then a partial Fisher-Yates shuffle of
// 0..d'-1 whose first tau entries are the rows (position i swaps with
// i + output mod (d' - i); the modulo bias is below 2^-40 for d' <= 2^24).
//
// Thread safety: immutable after construction; Apply is safe to call
// concurrently.
#ifndef CLICKD_CORE_OPTIM_DENSE_RADAGRAD_SRHT_H_
#define CLICKD_CORE_OPTIM_DENSE_RADAGRAD_SRHT_H_

#include <cstdint>
#include <vector>

#include "Eigen/Core"

namespace clickd {

class Srht {
 public:
  // Largest dim accepted: the padded order d' must stay an int.
  static constexpr int kMaxDim = 1 << 24;

  // Requires 1 <= tau <= dim <= kMaxDim (the caller validates).
  Srht(int dim, int tau, uint64_t seed);

  int dim() const { return static_cast<int>(signs_.size()); }
  int tau() const { return static_cast<int>(rows_.size()); }
  int padded_dim() const { return padded_dim_; }

  // D's diagonal on the d real coordinates (the padding is zero, so its
  // signs do not matter), each +1 or -1.
  const std::vector<double>& signs() const { return signs_; }

  // The rows of H that P keeps, tau distinct indices in [0, d'), in the
  // order they were drawn: entry k of Pi v is row rows()[k] of sqrt(d'/tau) H D v.
  const std::vector<int>& rows() const { return rows_; }

  // Returns Pi v for v of size dim().
  Eigen::VectorXd Apply(const Eigen::VectorXd& v) const;

 private:
  int padded_dim_;
  std::vector<double> signs_;
  std::vector<int> rows_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_RADAGRAD_SRHT_H_
