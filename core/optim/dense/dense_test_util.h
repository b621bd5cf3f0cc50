// Test helpers shared by the dense optimizers' tests (*_test.cc beside this
// file): random gradient streams, a feedback stream, and the state
// round-trip and rejection checks every optimizer must pass.
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_TEST_UTIL_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"
#include "gtest/gtest.h"

namespace clickd::dense_test {

using Factory = std::function<absl::StatusOr<std::unique_ptr<DenseOptimizer>>()>;

inline std::unique_ptr<DenseOptimizer> Make(const Factory& factory) {
  absl::StatusOr<std::unique_ptr<DenseOptimizer>> made = factory();
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// n gradients of size d with N(0, 1) coordinates in a random subspace of
// dimension `rank` (rank >= d: unrestricted), scaled by factors in [0.2, 5]
// so that H_t sees a spread of magnitudes.
inline std::vector<Eigen::VectorXd> RandomGradients(int n, int d, int rank, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> log_scale(std::log(0.2), std::log(5.0));
  const int r = std::min(rank, d);
  Eigen::MatrixXd basis(d, r);
  for (int j = 0; j < r; ++j) {
    for (int i = 0; i < d; ++i) basis(i, j) = normal(rng);
  }
  std::vector<Eigen::VectorXd> out;
  for (int t = 0; t < n; ++t) {
    Eigen::VectorXd c(r);
    for (int j = 0; j < r; ++j) c(j) = normal(rng);
    out.push_back(std::exp(log_scale(rng)) * (basis * c) / std::sqrt(static_cast<double>(r)));
  }
  return out;
}

// Feeds `grads` in order; returns the weights after each round.
inline std::vector<Eigen::VectorXd> Run(DenseOptimizer& opt,
                                        const std::vector<Eigen::VectorXd>& grads) {
  std::vector<Eigen::VectorXd> out;
  for (const Eigen::VectorXd& g : grads) {
    opt.Update(g);
    out.push_back(opt.weights());
  }
  return out;
}

// max_t ||a_t - b_t||_inf / max(1, ||b_t||_inf).
inline double MaxRelativeGap(const std::vector<Eigen::VectorXd>& a,
                             const std::vector<Eigen::VectorXd>& b) {
  EXPECT_EQ(a.size(), b.size());
  double gap = 0;
  for (size_t t = 0; t < std::min(a.size(), b.size()); ++t) {
    const double scale = std::max(1.0, b[t].lpNorm<Eigen::Infinity>());
    gap = std::max(gap, (a[t] - b[t]).lpNorm<Eigen::Infinity>() / scale);
  }
  return gap;
}

// A gradient that depends on the weights: least squares on a fixed random
// linear target, g = (w.x - y) x, so a state restored wrongly shows up in
// the next gradients too.
class FeedbackStream {
 public:
  FeedbackStream(int d, uint64_t seed) : rng_(seed), target_(d) {
    for (int i = 0; i < d; ++i) target_(i) = normal_(rng_);
  }
  Eigen::VectorXd Next(const Eigen::VectorXd& w) {
    Eigen::VectorXd x(w.size());
    for (int i = 0; i < x.size(); ++i) x(i) = 1.0 + normal_(rng_);
    return (w.dot(x) - target_.dot(x)) * x / static_cast<double>(x.size());
  }

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
  Eigen::VectorXd target_;
};

// Runs `before` rounds, serializes, restores into a fresh optimizer, then
// runs both `after` more rounds on the same feedback gradients: the bytes
// must agree after every round.
inline void ExpectRoundTrip(const Factory& factory, int before, int after) {
  std::unique_ptr<DenseOptimizer> a = Make(factory);
  ASSERT_NE(a, nullptr);
  FeedbackStream stream(a->dim(), 17);
  for (int t = 0; t < before; ++t) a->Update(stream.Next(a->weights()));
  const std::string bytes = a->SerializeState();
  std::unique_ptr<DenseOptimizer> b = Make(factory);
  ASSERT_TRUE(b->RestoreState(bytes).ok());
  EXPECT_EQ(b->SerializeState(), bytes);
  EXPECT_EQ(b->rounds(), uint64_t(before));
  for (int t = 0; t < after; ++t) {
    const Eigen::VectorXd g = stream.Next(a->weights());
    a->Update(g);
    b->Update(g);
    ASSERT_EQ(a->SerializeState(), b->SerializeState()) << "round " << before + t + 1;
  }
  EXPECT_EQ(a->weights(), b->weights());
  EXPECT_GT(a->weights().norm(), 0);
}

// Every kind of bad input is refused with the expected code, and the state
// is left as it was.
inline void ExpectRejects(const Factory& factory, const std::string& foreign_same_dim,
                          const std::string& same_kind_other_size) {
  std::unique_ptr<DenseOptimizer> a = Make(factory);
  ASSERT_NE(a, nullptr);
  FeedbackStream stream(a->dim(), 5);
  for (int t = 0; t < 7; ++t) a->Update(stream.Next(a->weights()));
  const std::string good = a->SerializeState();
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  const struct {
    std::string name;
    std::string bytes;
    absl::StatusCode code;
  } cases[] = {
      {"empty", "", absl::StatusCode::kDataLoss},
      {"truncated", good.substr(0, good.size() - 9), absl::StatusCode::kDataLoss},
      {"one byte more", good + "x", absl::StatusCode::kDataLoss},
      {"flipped bit", flipped, absl::StatusCode::kDataLoss},
      {"other kind", foreign_same_dim, absl::StatusCode::kInvalidArgument},
      {"other size", same_kind_other_size, absl::StatusCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    const absl::Status s = a->RestoreState(c.bytes);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_EQ(a->SerializeState(), good) << c.name;
    EXPECT_EQ(a->rounds(), 7u) << c.name;
  }
}

}  // namespace clickd::dense_test

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_TEST_UTIL_H_
