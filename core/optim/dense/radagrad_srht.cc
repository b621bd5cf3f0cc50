#include "core/optim/dense/radagrad_srht.h"

#include <cmath>
#include <numeric>
#include <random>
#include <utility>

namespace clickd {
namespace {

int NextPowerOfTwo(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// In-place Walsh-Hadamard transform without the 1/sqrt(n) normalization:
// x <- H_n x with H_n's entries +-1 (Sylvester order), n a power of two.
void HadamardInPlace(Eigen::VectorXd& x) {
  const Eigen::Index n = x.size();
  for (Eigen::Index half = 1; half < n; half *= 2) {
    for (Eigen::Index block = 0; block < n; block += 2 * half) {
      for (Eigen::Index i = block; i < block + half; ++i) {
        const double a = x(i), b = x(i + half);
        x(i) = a + b;
        x(i + half) = a - b;
      }
    }
  }
}

}  // namespace

Srht::Srht(int dim, int tau, uint64_t seed) : padded_dim_(NextPowerOfTwo(dim)), signs_(dim) {
  std::mt19937_64 rng(seed);
  for (double& s : signs_) s = (rng() >> 63) != 0 ? -1.0 : 1.0;
  std::vector<int> order(padded_dim_);
  std::iota(order.begin(), order.end(), 0);
  for (int i = 0; i < tau; ++i) {
    const uint64_t left = static_cast<uint64_t>(padded_dim_ - i);
    std::swap(order[i], order[i + static_cast<int>(rng() % left)]);
  }
  rows_.assign(order.begin(), order.begin() + tau);
}

Eigen::VectorXd Srht::Apply(const Eigen::VectorXd& v) const {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(padded_dim_);
  for (int i = 0; i < dim(); ++i) x(i) = signs_[i] * v(i);
  HadamardInPlace(x);
  // sqrt(d'/tau) times the normalized H's 1/sqrt(d') leaves 1/sqrt(tau).
  const double scale = 1.0 / std::sqrt(static_cast<double>(tau()));
  Eigen::VectorXd out(tau());
  for (int k = 0; k < tau(); ++k) out(k) = scale * x(rows_[k]);
  return out;
}

}  // namespace clickd
