// MetaGrad (full matrix) against a plain double-precision reference written
// here from the slides' formulas: Sigma_{t+1} g by solving
// (I/D^2 + 2 eta^2 sum g g^T) x = g by Gaussian elimination every round (the
// optimizer keeps Sigma by Sherman-Morrison), the projection by bisection on
// the KKT multiplier with explicit linear solves (the optimizer uses an eigendecomposition and
// Newton), the master's weights as prior * exp(-cumulative loss) (the
// optimizer shifts log-weights). Weights agree within kTol absolute on
// random streams of a few hundred rounds.
#include "core/optim/dense/metagrad.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using ::testing::HasSubstr;

constexpr double kTol = 1e-11;

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;

double Dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

Vec MatVec(const Mat& m, const Vec& v) {
  Vec out(v.size(), 0.0);
  for (size_t i = 0; i < v.size(); ++i) out[i] = Dot(m[i], v);
  return out;
}

// Gaussian elimination with partial pivoting: returns x with m x = b.
Vec Solve(Mat m, Vec b) {
  const size_t n = m.size();
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t row = col + 1; row < n; ++row) {
      if (std::abs(m[row][col]) > std::abs(m[pivot][col])) pivot = row;
    }
    std::swap(m[col], m[pivot]);
    std::swap(b[col], b[pivot]);
    for (size_t row = col + 1; row < n; ++row) {
      const double f = m[row][col] / m[col][col];
      for (size_t j = col; j < n; ++j) m[row][j] -= f * m[col][j];
      b[row] -= f * b[col];
    }
  }
  Vec x(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t j = i + 1; j < n; ++j) s -= m[i][j] * x[j];
    x[i] = s / m[i][i];
  }
  return x;
}

// The slides' algorithm, written out.
class ReferenceMetaGrad {
 public:
  ReferenceMetaGrad(double diameter, double gradient_bound, int num_slaves, int dim)
      : d_(diameter), dim_(dim), w_(dim, 0.0), gram_(dim, Vec(dim, 0.0)) {
    const double c = (num_slaves + 1.0) / num_slaves;
    for (int i = 0; i < num_slaves; ++i) {
      eta_.push_back(std::pow(2.0, -i) / (5 * diameter * gradient_bound));
      prior_.push_back(c / ((i + 1.0) * (i + 2.0)));
      loss_.push_back(0.0);
      slave_w_.push_back(Vec(dim, 0.0));
    }
  }

  const Vec& weights() const { return w_; }
  int projections() const { return projections_; }

  void Update(const Vec& g) {
    for (int a = 0; a < dim_; ++a) {
      for (int b = 0; b < dim_; ++b) gram_[a][b] += g[a] * g[b];
    }
    for (size_t k = 0; k < eta_.size(); ++k) {
      const double eta = eta_[k];
      Vec diff(dim_);
      for (int a = 0; a < dim_; ++a) diff[a] = slave_w_[k][a] - w_[a];
      const double r = Dot(diff, g);  // (w^eta - w)^T g
      loss_[k] += eta * r + eta * eta * r * r;
      const double s = 1 + 2 * eta * r;
      Mat precision = gram_;  // Sigma_{t+1}^-1 = I/D^2 + 2 eta^2 sum_{s<=t} g g^T
      for (int a = 0; a < dim_; ++a) {
        for (int b = 0; b < dim_; ++b) precision[a][b] *= 2 * eta * eta;
        precision[a][a] += 1 / (d_ * d_);
      }
      const Vec sigma_g = Solve(precision, g);  // Sigma_{t+1} g
      Vec tilde(dim_);
      for (int a = 0; a < dim_; ++a) tilde[a] = slave_w_[k][a] - eta * s * sigma_g[a];
      slave_w_[k] = Project(precision, tilde);
    }
    double num_den = 0;
    Vec num(dim_, 0.0);
    for (size_t k = 0; k < eta_.size(); ++k) {
      const double pi_eta = prior_[k] * std::exp(-loss_[k]) * eta_[k];
      for (int a = 0; a < dim_; ++a) num[a] += pi_eta * slave_w_[k][a];
      num_den += pi_eta;
    }
    for (int a = 0; a < dim_; ++a) w_[a] = num[a] / num_den;
  }

 private:
  // argmin_{||u|| <= D/2} (u - x)^T A (u - x): u(lambda) solves
  // (A + lambda I) u = A x; ||u(lambda)|| falls with lambda; bisect.
  Vec Project(const Mat& a, const Vec& x) {
    const double radius = d_ / 2;
    if (std::sqrt(Dot(x, x)) <= radius) return x;
    ++projections_;
    const Vec ax = MatVec(a, x);
    auto solve = [&](double lambda) {
      Mat shifted = a;
      for (int i = 0; i < dim_; ++i) shifted[i][i] += lambda;
      return Solve(shifted, ax);
    };
    auto norm = [](const Vec& v) { return std::sqrt(Dot(v, v)); };
    double lo = 0, hi = 1;
    while (norm(solve(hi)) > radius) hi *= 2;
    for (int iter = 0; iter < 200; ++iter) {
      const double mid = 0.5 * (lo + hi);
      if (mid == lo || mid == hi) break;
      (norm(solve(mid)) > radius ? lo : hi) = mid;
    }
    return solve(hi);
  }

  double d_;
  int dim_;
  Vec eta_, prior_, loss_;
  Mat slave_w_;
  Vec w_;
  Mat gram_;
  int projections_ = 0;
};

Eigen::VectorXd ToEigen(const Vec& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), v.size());
}

// Gradients with a persistent drift (so slaves reach the boundary) plus
// noise, scaled to norm at most G.
Vec RandomGradient(std::mt19937_64& rng, const Vec& drift, double gradient_bound) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Vec g(drift.size());
  for (size_t a = 0; a < g.size(); ++a) g[a] = drift[a] + normal(rng);
  const double norm = std::sqrt(Dot(g, g));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double scale = gradient_bound * unit(rng) / std::max(norm, 1e-12);
  for (double& x : g) x *= scale;
  return g;
}

struct StreamCase {
  int dim;
  double diameter;
  double gradient_bound;
  int num_slaves;
  double drift;
  int rounds;
  uint32_t seed;
};

void PrintTo(const StreamCase& c, std::ostream* os) {
  *os << "d=" << c.dim << " D=" << c.diameter << " G=" << c.gradient_bound << " K=" << c.num_slaves
      << " drift=" << c.drift << " rounds=" << c.rounds << " seed=" << c.seed;
}

class MetaGradReferenceTest : public ::testing::TestWithParam<StreamCase> {};

TEST_P(MetaGradReferenceTest, MatchesReferenceOnRandomStream) {
  const StreamCase& c = GetParam();
  MetaGradParams params;
  params.diameter = c.diameter;
  params.gradient_bound = c.gradient_bound;
  params.num_slaves = c.num_slaves;
  params.horizon = 300;
  const int k = MetaGradNumSlaves(params);
  auto opt = NewMetaGrad(params, c.dim);
  ASSERT_NE(opt, nullptr);
  ReferenceMetaGrad ref(c.diameter, c.gradient_bound, k, c.dim);
  std::mt19937_64 rng(c.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Vec drift(c.dim);
  for (double& x : drift) x = c.drift * normal(rng);
  for (int t = 0; t < c.rounds; ++t) {
    const Vec g = RandomGradient(rng, drift, c.gradient_bound);
    opt->Update(ToEigen(g));
    ref.Update(g);
    for (int a = 0; a < c.dim; ++a) {
      ASSERT_NEAR(opt->weights()[a], ref.weights()[a], kTol) << "round " << t << " coord " << a;
    }
  }
  EXPECT_EQ(opt->rounds(), static_cast<uint64_t>(c.rounds));
  if (c.drift > 0) {
    EXPECT_GT(ref.projections(), 0) << "the stream never projected";
  }
}

INSTANTIATE_TEST_SUITE_P(MetaGradStreams, MetaGradReferenceTest,
                         ::testing::Values(StreamCase{1, 2.0, 1.0, 0, 0.0, 300, 1},
                                           StreamCase{1, 0.5, 2.0, 0, 3.0, 300, 2},
                                           StreamCase{3, 1.0, 1.0, 0, 0.0, 300, 3},
                                           StreamCase{3, 0.4, 1.0, 4, 5.0, 300, 4},
                                           StreamCase{8, 1.0, 3.0, 0, 4.0, 200, 5},
                                           StreamCase{20, 1.0, 1.0, 3, 4.0, 120, 6}));

// Two rounds in one dimension, by hand: D = 2 (domain [-1, 1]), G = 1,
// K = 2 (eta = 0.1, 0.05; prior 1/2 : 1/6 up to C).
TEST(MetaGrad, FirstRoundsByHand) {
  MetaGradParams params;
  params.diameter = 2;
  params.gradient_bound = 1;
  params.num_slaves = 2;
  auto opt = NewMetaGrad(params, 1);
  EXPECT_EQ(opt->weights()[0], 0.0);
  // Round 1, g = 1: every point is 0, so r = 0, s = 1, no loss.
  opt->Update(Eigen::VectorXd::Constant(1, 1.0));
  const double w0 = -0.1 / (0.25 + 2 * 0.01 * 1);     // -eta Sigma_2 g, eta = 0.1
  const double w1 = -0.05 / (0.25 + 2 * 0.0025 * 1);  // eta = 0.05
  const double p0 = 0.5 * 0.1, p1 = 1.0 / 6 * 0.05;   // pi * eta
  const double w = (p0 * w0 + p1 * w1) / (p0 + p1);
  EXPECT_NEAR(opt->weights()[0], w, 1e-15);
  // Round 2, g = -0.5.
  const double g = -0.5;
  const double r0 = (w0 - w) * g, r1 = (w1 - w) * g;
  const double l0 = 0.1 * r0 + 0.01 * r0 * r0, l1 = 0.05 * r1 + 0.0025 * r1 * r1;
  const double v0 = w0 - 0.1 * (1 + 0.2 * r0) * g / (0.25 + 2 * 0.01 * 1.25);
  const double v1 = w1 - 0.05 * (1 + 0.1 * r1) * g / (0.25 + 2 * 0.0025 * 1.25);
  const double q0 = 0.5 * std::exp(-l0) * 0.1, q1 = 1.0 / 6 * std::exp(-l1) * 0.05;
  opt->Update(Eigen::VectorXd::Constant(1, g));
  EXPECT_NEAR(opt->weights()[0], (q0 * v0 + q1 * v1) / (q0 + q1), 1e-15);
}

TEST(MetaGrad, StaysInTheBall) {
  MetaGradParams params;
  params.diameter = 1;
  auto opt = NewMetaGrad(params, 4);
  const Eigen::VectorXd g = Eigen::VectorXd::Constant(4, -0.5);  // pulls every slave outward
  for (int t = 0; t < 500; ++t) {
    opt->Update(g);
    ASSERT_LE(opt->weights().norm(), 0.5 + 1e-12) << "round " << t;
  }
  EXPECT_NEAR(opt->weights().norm(), 0.5, 1e-3);  // at the boundary, towards -g
  EXPECT_GT(opt->weights()[0], 0);
}

TEST(MetaGrad, DefaultsArePinned) {
  const MetaGradParams params;
  EXPECT_EQ(params.diameter, 2.0);
  EXPECT_EQ(params.gradient_bound, 1.0);
  EXPECT_EQ(params.num_slaves, 0);
  EXPECT_EQ(params.horizon, uint64_t{1} << 30);
  EXPECT_EQ(MetaGradNumSlaves(params), 16);
  EXPECT_TRUE(ValidateMetaGradParams(params).ok());
}

TEST(MetaGrad, SlaveCountFollowsTheSlidesRule) {
  MetaGradParams params;
  for (auto [horizon, k] : std::vector<std::pair<uint64_t, int>>{
           {1, 1}, {2, 2}, {4, 2}, {5, 3}, {100, 5}, {1000000, 11}, {uint64_t{1} << 40, 21}}) {
    params.horizon = horizon;
    EXPECT_EQ(MetaGradNumSlaves(params), k) << "T = " << horizon;
  }
  params.num_slaves = 7;
  EXPECT_EQ(MetaGradNumSlaves(params), 7);
}

TEST(MetaGrad, ValidationNamesFieldAndLimit) {
  MetaGradParams params;
  params.diameter = -1;
  absl::Status s = ValidateMetaGradParams(params);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("metagrad.diameter is -1; must be finite and > 0"));
  params = {};
  params.gradient_bound = std::nan("");
  EXPECT_THAT(ValidateMetaGradParams(params).message(), HasSubstr("metagrad.gradient_bound"));
  params = {};
  params.num_slaves = 65;
  EXPECT_THAT(ValidateMetaGradParams(params).message(),
              HasSubstr("metagrad.num_slaves is 65; must be in [0, 64]"));
  params = {};
  params.horizon = 0;
  EXPECT_THAT(ValidateMetaGradParams(params).message(), HasSubstr("metagrad.horizon is 0"));
  params.num_slaves = 3;
  EXPECT_TRUE(ValidateMetaGradParams(params).ok());
  EXPECT_EQ(NewMetaGrad(MetaGradParams{.diameter = 0}, 3), nullptr);
  EXPECT_EQ(NewMetaGrad(MetaGradParams{}, 0), nullptr);
}

// Runs `n` rounds of a fixed pseudo-random stream from `seed`.
void RunStream(DenseOptimizer& opt, int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Vec drift(opt.dim(), 2.0);
  for (int t = 0; t < n; ++t) opt.Update(ToEigen(RandomGradient(rng, drift, 1.0)));
}

TEST(MetaGrad, SerializationRoundTripsBitIdentically) {
  MetaGradParams params;
  params.diameter = 0.5;
  auto a = NewMetaGrad(params, 5);
  RunStream(*a, 200, 7);
  const std::string bytes = a->SerializeState();
  EXPECT_EQ(bytes.size(), 40 + a->StateBytes() - 8);
  auto b = NewMetaGrad(params, 5);
  ASSERT_TRUE(b->RestoreState(bytes).ok());
  EXPECT_EQ(b->SerializeState(), bytes);
  EXPECT_EQ(b->rounds(), 200u);
  RunStream(*a, 100, 8);
  RunStream(*b, 100, 8);
  EXPECT_EQ(a->SerializeState(), b->SerializeState());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a->weights()[i], b->weights()[i]);
}

TEST(MetaGrad, RestoreRejectsForeignBytesAndKeepsState) {
  MetaGradParams params;
  auto opt = NewMetaGrad(params, 3);
  RunStream(*opt, 50, 1);
  const std::string before = opt->SerializeState();
  auto expect_rejected = [&](std::string_view bytes, absl::StatusCode code, const char* what) {
    const absl::Status s = opt->RestoreState(bytes);
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_THAT(s.message(), HasSubstr(what));
    EXPECT_EQ(opt->SerializeState(), before);
  };
  expect_rejected("", absl::StatusCode::kDataLoss, "shorter than its 40-byte header");
  expect_rejected(before.substr(0, before.size() - 1), absl::StatusCode::kDataLoss, "expected");
  expect_rejected(before + "x", absl::StatusCode::kDataLoss, "expected");
  std::string bad_magic = before;
  bad_magic[0] ^= 1;
  expect_rejected(bad_magic, absl::StatusCode::kDataLoss, "bad magic");
  std::string nan = before;
  const double q = std::nan("");
  std::memcpy(&nan[nan.size() - 8], &q, 8);
  expect_rejected(nan, absl::StatusCode::kDataLoss, "not finite");
  auto other_dim = NewMetaGrad(params, 4);
  expect_rejected(other_dim->SerializeState(), absl::StatusCode::kInvalidArgument, "dim 4");
  params.num_slaves = 3;
  expect_rejected(NewMetaGrad(params, 3)->SerializeState(), absl::StatusCode::kInvalidArgument,
                  "3 slaves");
  params = {};
  params.diameter = 3;
  expect_rejected(NewMetaGrad(params, 3)->SerializeState(), absl::StatusCode::kInvalidArgument,
                  "diameter 3");
}

}  // namespace
}  // namespace clickd
