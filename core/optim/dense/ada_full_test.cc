// ADA-FULL against the explicit formula of seed 002 section 2: H_t = delta I
// + G_t^{1/2} built as a d x d matrix (matrix square root from the
// eigendecomposition of G_t) and solved by Cholesky.
#include "core/optim/dense/ada_full.h"

#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Eigenvalues"
#include "core/optim/dense/ada_diag.h"
#include "core/optim/dense/dense_test_util.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

// The optimizer applies Q (delta + L^{1/2})^{-1} Q^T; the reference solves
// with the assembled matrix, so round-off differs by a few ulps of the
// condition number.
constexpr double kTol = 1e-9;

// Returns G^{1/2} for symmetric positive semidefinite G (round-off
// negatives clipped to 0).
Eigen::MatrixXd Sqrtm(const Eigen::MatrixXd& g) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g);
  const Eigen::VectorXd root = es.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return es.eigenvectors() * root.asDiagonal() * es.eigenvectors().transpose();
}

struct Trajectories {
  std::vector<Eigen::VectorXd> mirror_descent, dual_averaging;
};

// Both forms at once; G_t does not depend on the weights here.
Trajectories Reference(const AdaFullParams& p, const std::vector<Eigen::VectorXd>& grads) {
  const int d = static_cast<int>(grads[0].size());
  Eigen::MatrixXd g_outer = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd gbar = Eigen::VectorXd::Zero(d), beta = Eigen::VectorXd::Zero(d);
  Trajectories out;
  for (const Eigen::VectorXd& g : grads) {
    g_outer += g * g.transpose();
    gbar += g;
    const Eigen::LLT<Eigen::MatrixXd> h(p.delta * Eigen::MatrixXd::Identity(d, d) + Sqrtm(g_outer));
    beta -= p.eta * h.solve(g);  // (2)
    out.mirror_descent.push_back(beta);
    out.dual_averaging.push_back(-p.eta * h.solve(gbar));  // (1)
  }
  return out;
}

TEST(AdaFullTest, DefaultsArePinned) {
  AdaFullParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
}

TEST(AdaFullTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateAdaFullParams({}, 3).ok());
  absl::Status s = ValidateAdaFullParams({.delta = 0}, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("delta is 0; must be finite and > 0"), std::string::npos) << s;
  EXPECT_FALSE(NewAdaFull({.eta = INFINITY}, 3).ok());
  EXPECT_FALSE(NewAdaFullDa({}, -1).ok());
}

TEST(AdaFullTest, FirstStepByHand) {
  // One gradient g: G_1^{1/2} = g g^T / |g|, so H_1 g = (delta + |g|) g and
  // beta_2 = -eta g / (delta + |g|) in both forms.
  const AdaFullParams p{.eta = 0.5, .delta = 2.0};
  Eigen::VectorXd g(3);
  g << 3, 0, -4;
  for (bool da : {false, true}) {
    auto opt = *(da ? NewAdaFullDa(p, 3) : NewAdaFull(p, 3));
    opt->Update(g);
    const Eigen::VectorXd want = -0.5 * g / 7.0;
    EXPECT_LT((opt->weights() - want).norm(), 1e-14);
  }
}

TEST(AdaFullTest, MatchesReferenceBothForms) {
  for (int d : {1, 5, 20}) {
    // Full-rank and low-rank streams (low rank keeps G_t singular).
    for (int rank : {d, 2}) {
      const auto grads = RandomGradients(150, d, rank, 200 + d + rank);
      for (const AdaFullParams& p : {AdaFullParams{}, AdaFullParams{.eta = 3, .delta = 1e-3}}) {
        auto md = *NewAdaFull(p, d);
        auto da = *NewAdaFullDa(p, d);
        const Trajectories want = Reference(p, grads);
        EXPECT_LT(MaxRelativeGap(dense_test::Run(*md, grads), want.mirror_descent), kTol)
            << "d=" << d << " rank=" << rank << " delta=" << p.delta;
        EXPECT_LT(MaxRelativeGap(dense_test::Run(*da, grads), want.dual_averaging), kTol)
            << "d=" << d << " rank=" << rank << " delta=" << p.delta;
      }
    }
  }
}

TEST(AdaFullTest, DiagonalGradientsMatchAdaDiag) {
  // Gradients along coordinate axes make G_t diagonal, where ADA-FULL and
  // ADA-DIAG coincide.
  const int d = 6;
  std::vector<Eigen::VectorXd> grads = RandomGradients(100, d, d, 9);
  for (size_t t = 0; t < grads.size(); ++t) {
    const double v = grads[t](t % d);
    grads[t].setZero();
    grads[t](t % d) = v;
  }
  auto full = *NewAdaFull({}, d);
  auto diag = *NewAdaDiag({}, d);
  EXPECT_LT(MaxRelativeGap(dense_test::Run(*full, grads), dense_test::Run(*diag, grads)), 1e-12);
}

TEST(AdaFullTest, ApplyInverseTakesManyColumns) {
  const int d = 8;
  Eigen::MatrixXd g_outer = Eigen::MatrixXd::Zero(d, d);
  for (const auto& g : RandomGradients(5, d, d, 3)) g_outer += g * g.transpose();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g_outer);
  const Eigen::MatrixXd v = Eigen::MatrixXd::Random(d, 3);
  const Eigen::MatrixXd h = 0.3 * Eigen::MatrixXd::Identity(d, d) + Sqrtm(g_outer);
  const Eigen::MatrixXd got = ApplyAdaFullInverse(es.eigenvectors(), es.eigenvalues(), 0.3, v);
  EXPECT_LT((h * got - v).norm(), 1e-10);
}

TEST(AdaFullTest, StateRoundTripsBitIdentically) {
  for (bool da : {false, true}) {
    dense_test::ExpectRoundTrip([da] { return da ? NewAdaFullDa({}, 10) : NewAdaFull({}, 10); }, 40,
                                30);
  }
}

TEST(AdaFullTest, RestoreRejectsOtherBytesAndKeepsState) {
  dense_test::ExpectRejects([] { return NewAdaFull({}, 6); },
                            (*NewAdaFullDa({}, 6))->SerializeState(),
                            (*NewAdaFull({}, 5))->SerializeState());
  dense_test::ExpectRejects([] { return NewAdaFullDa({}, 6); },
                            (*NewAdaDiagDa({}, 6))->SerializeState(),
                            (*NewAdaFullDa({}, 8))->SerializeState());
}

}  // namespace
}  // namespace clickd
