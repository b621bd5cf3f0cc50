// RADAGRAD (seed 002 eq. (4)) against a dense reference: Pi built as an
// explicit tau x d matrix from a Sylvester Hadamard matrix, G_t kept as
// the d x d sum of outer products, G~_t = G_t Pi^T recomputed each round,
// and V, Sigma taken from Eigen's JacobiSVD of G~_t directly (V = Q W are
// G~_t's left singular vectors, since B = G~^T Q = R^T). No fast transform,
// no QR and no accumulated d x tau matrix on this side.
#include "core/optim/dense/radagrad.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "Eigen/SVD"
#include "core/optim/dense/ada_fd.h"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/dense_state_codec.h"
#include "core/optim/dense/dense_test_util.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

// The two sides reach V and Sigma by different factorizations; the square
// root of small singular values costs digits on both.
constexpr double kTol = 1e-9;

std::unique_ptr<Radagrad> New(const RadagradParams& p, int dim) {
  absl::StatusOr<std::unique_ptr<Radagrad>> made = Radagrad::Create(p, dim);
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// sqrt(d'/tau) P H D with H the normalized Hadamard matrix of order d',
// built by Sylvester's doubling, restricted to the first d columns (the
// padding coordinates are zero).
Eigen::MatrixXd DensePi(const Srht& srht) {
  const int n = srht.padded_dim();
  Eigen::MatrixXd h = Eigen::MatrixXd::Ones(1, 1);
  while (h.rows() < n) {
    const Eigen::Index m = h.rows();
    Eigen::MatrixXd next(2 * m, 2 * m);
    next << h, h, h, -h;
    h = next;
  }
  h /= std::sqrt(static_cast<double>(n));
  const double scale = std::sqrt(static_cast<double>(n) / srht.tau());
  Eigen::MatrixXd pi(srht.tau(), srht.dim());
  for (int k = 0; k < srht.tau(); ++k) {
    for (int j = 0; j < srht.dim(); ++j) pi(k, j) = scale * h(srht.rows()[k], j) * srht.signs()[j];
  }
  return pi;
}

// Eq. (4) recomputed from scratch every round.
std::vector<Eigen::VectorXd> Reference(const RadagradParams& p, const Eigen::MatrixXd& pi,
                                       const std::vector<Eigen::VectorXd>& grads) {
  const Eigen::Index d = grads[0].size();
  Eigen::MatrixXd g_outer = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d);
  std::vector<Eigen::VectorXd> out;
  for (const Eigen::VectorXd& g : grads) {
    g_outer += g * g.transpose();
    const Eigen::MatrixXd g_tilde = g_outer * pi.transpose();
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(g_tilde, Eigen::ComputeThinU);
    const Eigen::MatrixXd& v = svd.matrixU();
    Eigen::VectorXd inv = svd.singularValues();
    for (Eigen::Index i = 0; i < inv.size(); ++i) inv(i) = 1.0 / (std::sqrt(inv(i)) + p.delta);
    const Eigen::MatrixXd precond = v * inv.asDiagonal() * v.transpose();
    const Eigen::MatrixXd outside = Eigen::MatrixXd::Identity(d, d) - v * v.transpose();
    beta = beta - p.eta * precond * g - p.eta * outside * g;
    out.push_back(beta);
  }
  return out;
}

TEST(RadagradTest, DefaultsArePinned) {
  RadagradParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
  EXPECT_EQ(p.tau, 10);
  EXPECT_EQ(p.seed, 1u);
}

TEST(RadagradTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateRadagradParams({.tau = 5}, 5).ok());
  const struct {
    RadagradParams params;
    int dim;
    const char* message;
  } cases[] = {
      {{.eta = 0, .tau = 2}, 5, "eta is 0; must be finite and > 0"},
      {{.eta = NAN, .tau = 2}, 5, "eta is nan; must be finite and > 0"},
      {{.delta = -1, .tau = 2}, 5, "delta is -1; must be finite and > 0"},
      {{.delta = INFINITY, .tau = 2}, 5, "delta is inf; must be finite and > 0"},
      {{.tau = 0}, 5, "tau is 0; must be in [1, dim] (dim is 5)"},
      {{.tau = 6}, 5, "tau is 6; must be in [1, dim] (dim is 5)"},
      {{.tau = 1}, 0, "dim is 0; must be >= 1"},
      {{.tau = 1}, Srht::kMaxDim + 1, "dim is 16777217; must be <= 16777216"},
  };
  for (const auto& c : cases) {
    const absl::Status s = ValidateRadagradParams(c.params, c.dim);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s;
    EXPECT_FALSE(Radagrad::Create(c.params, c.dim).ok()) << c.message;
  }
  EXPECT_FALSE(Radagrad::Create({}, 9).ok());  // default tau 10 > dim 9
}

// The draw follows the recipe in radagrad_srht.h, and Apply is the dense Pi.
TEST(RadagradTest, ProjectionIsTheDocumentedSrht) {
  for (int d : {1, 5, 12, 16, 33}) {
    for (int tau : {1, 4, d}) {
      if (tau > d) continue;
      const uint64_t seed = 1000 + 10 * d + tau;
      const Srht srht(d, tau, seed);
      int padded = 1;
      while (padded < d) padded *= 2;
      ASSERT_EQ(srht.padded_dim(), padded);
      std::mt19937_64 rng(seed);
      for (int i = 0; i < d; ++i) {
        EXPECT_EQ(srht.signs()[i], (rng() >> 63) != 0 ? -1.0 : 1.0) << "d=" << d << " i=" << i;
      }
      std::vector<int> order(padded);
      std::iota(order.begin(), order.end(), 0);
      for (int i = 0; i < tau; ++i) std::swap(order[i], order[i + rng() % (padded - i)]);
      EXPECT_EQ(srht.rows(), std::vector<int>(order.begin(), order.begin() + tau));
      EXPECT_EQ(std::set<int>(srht.rows().begin(), srht.rows().end()).size(), size_t(tau));

      const Eigen::MatrixXd pi = DensePi(srht);
      for (const Eigen::VectorXd& v : RandomGradients(5, d, d, seed)) {
        EXPECT_LT((srht.Apply(v) - pi * v).norm(), 1e-12 * (1 + v.norm())) << d << " " << tau;
      }
      // With nothing subsampled or padded, Pi = H D is orthogonal.
      if (tau == d && d == padded) {
        EXPECT_LT((pi.transpose() * pi - Eigen::MatrixXd::Identity(d, d)).norm(), 1e-12);
      }
    }
  }
}

TEST(RadagradTest, MatchesDenseReference) {
  const int d = 16, tau = 4;
  // rank 16: G~ reaches rank tau at round 4; rank 3 < tau: it never does,
  // and one singular value stays zero throughout.
  for (int rank : {16, 3}) {
    const auto grads = RandomGradients(200, d, rank, 40 + rank);
    for (RadagradParams p : {RadagradParams{.tau = tau},
                             RadagradParams{.eta = 2, .delta = 1e-3, .tau = tau, .seed = 9}}) {
      auto opt = New(p, d);
      ASSERT_NE(opt, nullptr);
      const auto want = Reference(p, DensePi(opt->projection()), grads);
      const auto got = dense_test::Run(*opt, grads);
      EXPECT_LT(MaxRelativeGap(got, want), kTol) << "rank=" << rank << " delta=" << p.delta;
      EXPECT_GT(got.back().norm(), 0);
    }
  }
}

// Round 1: G~_1 = g g~^T has rank 1, one singular value |g| |g~| with
// V's first column g / |g|, the other tau - 1 zero; gamma_1 = 0, so
// beta_2 = -eta g / (sqrt(|g| |g~|) + delta). Round-off leaves g a ~1e-16
// component along the zero singular values' columns, which the step scales
// by 1/delta = 1e4; hence 1e-10, not 1e-14.
TEST(RadagradTest, FirstRoundsAreFiniteAndByHand) {
  for (int d : {1, 16}) {
    const RadagradParams p{.eta = 0.5, .delta = 1e-4, .tau = std::min(4, d)};
    const auto grads = RandomGradients(p.tau, d, d, 3);
    auto opt = New(p, d);
    ASSERT_NE(opt, nullptr);
    const Eigen::VectorXd& g = grads[0];
    const double sigma = g.norm() * (DensePi(opt->projection()) * g).norm();
    opt->Update(g);
    EXPECT_LT((opt->weights() - (-p.eta * g / (std::sqrt(sigma) + p.delta))).norm(),
              1e-10 * opt->weights().norm())
        << "d=" << d;
    for (size_t t = 1; t < grads.size(); ++t) {
      opt->Update(grads[t]);
      EXPECT_TRUE(opt->weights().allFinite()) << "round " << t + 1;
    }
  }
  // A zero gradient leaves G~ = 0 (every singular value zero): no move.
  auto opt = New({.tau = 4}, 16);
  opt->Update(Eigen::VectorXd::Zero(16));
  EXPECT_TRUE(opt->weights().isZero(0));
  // A gradient the projection maps to 0 leaves G~ = 0 with g != 0: the step
  // is finite (its direction is the QR's arbitrary completion; see radagrad.h).
  auto blind = New({.tau = 1}, 2);
  const Srht& pi = blind->projection();
  const double h = pi.rows()[0] == 1 ? -1.0 : 1.0;  // row r of H_2: (1, (-1)^r)
  Eigen::VectorXd g(2);
  g << 1, -pi.signs()[0] / (h * pi.signs()[1]);
  ASSERT_LT(pi.Apply(g).norm(), 1e-15);
  blind->Update(g);
  EXPECT_TRUE(blind->weights().allFinite());
  EXPECT_GT(blind->weights().norm(), 0);
}

// With tau = d = d', Pi = H D is orthogonal, G~_t = G_t Pi^T has G_t's
// eigenvalues as singular values and its eigenvectors as V, and V spans
// R^d (gamma = 0): RADAGRAD is ADA-FULL's mirror descent, eq. (2).
TEST(RadagradTest, FullProjectionIsAdaFull) {
  const int d = 8;
  const auto grads = RandomGradients(120, d, d, 12);
  const AdaFullParams fp{.eta = 0.7, .delta = 0.05};
  const auto want = dense_test::Run(**NewAdaFull(fp, d), grads);
  auto opt = New({.eta = 0.7, .delta = 0.05, .tau = d}, d);
  EXPECT_LT(MaxRelativeGap(dense_test::Run(*opt, grads), want), 1e-8);
  auto short_projection = New({.eta = 0.7, .delta = 0.05, .tau = d - 3}, d);
  EXPECT_GT(MaxRelativeGap(dense_test::Run(*short_projection, grads), want), 1e-3);
}

TEST(RadagradTest, SeedDecidesTheRun) {
  const int d = 16;
  const auto grads = RandomGradients(60, d, d, 21);
  const auto a = dense_test::Run(*New({.tau = 4, .seed = 5}, d), grads);
  const auto b = dense_test::Run(*New({.tau = 4, .seed = 5}, d), grads);
  const auto c = dense_test::Run(*New({.tau = 4, .seed = 6}, d), grads);
  for (size_t t = 0; t < a.size(); ++t) ASSERT_EQ(a[t], b[t]) << "round " << t + 1;
  EXPECT_GT((a.back() - c.back()).norm(), 1e-6 * a.back().norm());
}

TEST(RadagradTest, StateRoundTripsBitIdentically) {
  for (uint64_t seed : {uint64_t{1}, uint64_t{0xdeadbeefcafef00d}}) {
    dense_test::ExpectRoundTrip([seed] { return Radagrad::Create({.tau = 4, .seed = seed}, 12); },
                                40, 30);
  }
}

TEST(RadagradTest, RestoreRejectsOtherBytesAndKeepsState) {
  const RadagradParams p{.tau = 4};
  dense_test::ExpectRejects([&] { return Radagrad::Create(p, 8); },
                            (*NewAdaFd({.tau = 4}, 8))->SerializeState(),
                            (*Radagrad::Create({.tau = 3}, 8))->SerializeState());
  auto opt = New(p, 8);
  opt->Update(Eigen::VectorXd::Ones(8));
  const std::string before = opt->SerializeState();
  auto other_seed = New({.tau = 4, .seed = 0x100000002}, 8);
  other_seed->Update(Eigen::VectorXd::Ones(8));
  const absl::Status s = opt->RestoreState(other_seed->SerializeState());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("seed is 4294967298 in the bytes, 1 here"), std::string::npos) << s;
  EXPECT_EQ(opt->SerializeState(), before);
  // Intact bytes whose seed block is not two 32-bit halves.
  dense_state::Writer w("radagrad", 8, 4, 3);
  Eigen::VectorXd half_seed(2);
  half_seed << 0.5, 0;
  w.Put(half_seed);
  w.Put(Eigen::MatrixXd::Zero(8, 4).eval());
  w.Put(Eigen::VectorXd::Zero(8).eval());
  const absl::Status bad_seed = opt->RestoreState(std::move(w).Finish());
  EXPECT_EQ(bad_seed.code(), absl::StatusCode::kDataLoss) << bad_seed;
  EXPECT_EQ(opt->SerializeState(), before);
}

TEST(RadagradTest, StateBytesIsOrderTauTimesDim) {
  for (int d : {100, 1000}) {
    for (int tau : {2, 10}) {
      // G~, the QR factor, Q and V (d x tau each) and beta.
      EXPECT_EQ(New({.tau = tau}, d)->StateBytes(), 8u * (4 * tau * d + d)) << d << " " << tau;
    }
  }
}

}  // namespace
}  // namespace clickd
