// FD-SON against an explicit d x d construction: the frequent-directions
// covariance M = S^T S of the rows sqrt(t^{-p}) g_t, shrunk through the
// eigendecomposition of M, and H_t = delta I + M assembled and solved by
// Cholesky. No sketch matrix or Woodbury formula on this side.
#include "core/optim/dense/fd_son.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "Eigen/Cholesky"
#include "Eigen/Eigenvalues"
#include "core/optim/dense/ada_fd.h"
#include "core/optim/dense/dense_test_util.h"
#include "core/optim/dense/ons.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

constexpr double kTol = 1e-9;

// One FD step on the covariance (see ada_fd_test.cc): returns S_t^T S_t.
Eigen::MatrixXd FdStep(const Eigen::MatrixXd& m, const Eigen::VectorXd& row, int tau) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(m + row * row.transpose());
  const Eigen::VectorXd lambda = es.eigenvalues().reverse();
  const Eigen::MatrixXd v = es.eigenvectors().rowwise().reverse();
  const double floor = 1e-12 * std::max(lambda(0), 0.0);
  const double sigma_t = lambda(tau - 1) <= floor ? 0.0 : lambda(tau - 1);
  Eigen::MatrixXd next = Eigen::MatrixXd::Zero(m.rows(), m.cols());
  for (int i = 0; i < tau - 1; ++i) {
    if (lambda(i) > floor)
      next += std::max(lambda(i) - sigma_t, 0.0) * v.col(i) * v.col(i).transpose();
  }
  return next;
}

std::vector<Eigen::VectorXd> Reference(const FdSonParams& p,
                                       const std::vector<Eigen::VectorXd>& grads) {
  const int d = static_cast<int>(grads[0].size());
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(d, d);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d);
  std::vector<Eigen::VectorXd> out;
  for (size_t t = 1; t <= grads.size(); ++t) {
    const Eigen::VectorXd& g = grads[t - 1];
    m = FdStep(m, std::sqrt(std::pow(static_cast<double>(t), -p.weight_power)) * g, p.tau);
    const Eigen::MatrixXd h = p.delta * Eigen::MatrixXd::Identity(d, d) + m;
    beta -= p.eta * h.llt().solve(g);
    out.push_back(beta);
  }
  return out;
}

TEST(FdSonTest, DefaultsArePinned) {
  FdSonParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
  EXPECT_EQ(p.tau, 10);
  EXPECT_EQ(p.weight_power, 0.5);
}

TEST(FdSonTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateFdSonParams({.tau = 3}, 3).ok());
  absl::Status s = ValidateFdSonParams({.tau = 4}, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tau is 4; must be in [1, dim] (dim is 3)"), std::string::npos) << s;
  s = ValidateFdSonParams({.tau = 2, .weight_power = -0.1}, 3);
  EXPECT_NE(s.message().find("weight_power is -0.1; must be in [0, 1]"), std::string::npos) << s;
  EXPECT_FALSE(NewFdSon({.eta = 0, .tau = 2}, 3).ok());
}

TEST(FdSonTest, MatchesExplicitSketchReference) {
  for (int d : {6, 30}) {
    for (int tau : {1, 3, 10}) {
      if (tau > d) continue;
      const auto grads = RandomGradients(150, d, d, 500 + 10 * d + tau);
      for (FdSonParams p :
           {FdSonParams{}, FdSonParams{.eta = 2, .delta = 1e-2, .weight_power = 0}}) {
        p.tau = tau;
        auto son = *NewFdSon(p, d);
        EXPECT_LT(MaxRelativeGap(dense_test::Run(*son, grads), Reference(p, grads)), kTol)
            << "d=" << d << " tau=" << tau << " p=" << p.weight_power;
      }
    }
  }
}

// With gradients of rank r <= tau - 1 the sketch is exact and FD-SON is ONS;
// with tau = r it is not.
TEST(FdSonTest, ExactSketchIsOns) {
  const int d = 25, r = 4;
  const auto grads = RandomGradients(300, d, r, 8);
  const OnsParams op{.eta = 0.5, .delta = 0.1};
  auto ons = *NewOns(op, d);
  const auto want = dense_test::Run(*ons, grads);
  auto exact = *NewFdSon({.eta = 0.5, .delta = 0.1, .tau = r + 1}, d);
  EXPECT_LT(MaxRelativeGap(dense_test::Run(*exact, grads), want), 1e-8);
  auto short_sketch = *NewFdSon({.eta = 0.5, .delta = 0.1, .tau = r}, d);
  EXPECT_GT(MaxRelativeGap(dense_test::Run(*short_sketch, grads), want), 1e-3);
}

TEST(FdSonTest, StateRoundTripsBitIdentically) {
  dense_test::ExpectRoundTrip([] { return NewFdSon({.tau = 4}, 12); }, 40, 30);
}

TEST(FdSonTest, RestoreRejectsOtherBytesAndKeepsState) {
  // ADA-FD's state has the same shapes; only the kind tells them apart.
  dense_test::ExpectRejects([] { return NewFdSon({.tau = 4}, 8); },
                            (*NewAdaFd({.tau = 4}, 8))->SerializeState(),
                            (*NewFdSon({.tau = 5}, 8))->SerializeState());
}

TEST(FdSonTest, StateBytesIsOrderTauTimesDim) {
  EXPECT_EQ((*NewFdSon({.tau = 10}, 1000))->StateBytes(),
            8u * (2 * 10 * 1000 + 1000 + 10 + 3 * 10 * 10));
}

}  // namespace
}  // namespace clickd
