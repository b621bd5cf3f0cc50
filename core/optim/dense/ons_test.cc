// ONS against seed 002's statement (eq. (5) as rewritten in section 3.3):
// H_t = delta I + sum_{i<=t} i^{-p} g_i g_i^T assembled as a d x d matrix
// and solved by Cholesky every round.
#include "core/optim/dense/ons.h"

#include <cmath>
#include <vector>

#include "Eigen/Cholesky"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/dense_test_util.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

// Sherman-Morrison updates of H^{-1} against a fresh solve each round.
constexpr double kTol = 1e-9;

std::vector<Eigen::VectorXd> Reference(const OnsParams& p,
                                       const std::vector<Eigen::VectorXd>& grads) {
  const int d = static_cast<int>(grads[0].size());
  Eigen::MatrixXd h = p.delta * Eigen::MatrixXd::Identity(d, d);
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d);
  std::vector<Eigen::VectorXd> out;
  for (size_t t = 1; t <= grads.size(); ++t) {
    const Eigen::VectorXd& g = grads[t - 1];
    h += std::pow(static_cast<double>(t), -p.weight_power) * g * g.transpose();
    beta -= p.eta * h.llt().solve(g);
    out.push_back(beta);
  }
  return out;
}

TEST(OnsTest, DefaultsArePinned) {
  OnsParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
  EXPECT_EQ(p.weight_power, 0.5);
}

TEST(OnsTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateOnsParams({}, 4).ok());
  absl::Status s = ValidateOnsParams({.weight_power = 1.5}, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("weight_power is 1.5; must be in [0, 1]"), std::string::npos) << s;
  EXPECT_FALSE(NewOns({.delta = -2}, 4).ok());
  EXPECT_FALSE(NewOns({}, 0).ok());
}

TEST(OnsTest, FirstStepByHand) {
  // H_1 = delta I + g g^T (weight 1^{-p} = 1), so H_1^{-1} g = g / (delta + |g|^2).
  Eigen::VectorXd g(2);
  g << 3, -4;
  auto ons = *NewOns({.eta = 0.5, .delta = 5.0}, 2);
  ons->Update(g);
  EXPECT_LT((ons->weights() - (-0.5 * g / 30.0)).norm(), 1e-15);
}

TEST(OnsTest, MatchesReference) {
  for (int d : {1, 8, 30}) {
    const auto grads = RandomGradients(250, d, d, 400 + d);
    for (const OnsParams& p : {OnsParams{}, OnsParams{.eta = 2, .delta = 1e-2, .weight_power = 0},
                               OnsParams{.eta = 0.3, .delta = 10, .weight_power = 1}}) {
      auto ons = *NewOns(p, d);
      EXPECT_LT(MaxRelativeGap(dense_test::Run(*ons, grads), Reference(p, grads)), kTol)
          << "d=" << d << " p=" << p.weight_power;
    }
  }
}

TEST(OnsTest, DiffersFromAdaFull) {
  // Same eta and delta, but ONS uses the weighted G itself where ADA-FULL
  // uses G^{1/2}: a guard against wiring one to the other.
  const auto grads = RandomGradients(50, 5, 5, 1);
  auto ons = *NewOns({}, 5);
  auto full = *NewAdaFull({}, 5);
  EXPECT_GT(MaxRelativeGap(dense_test::Run(*ons, grads), dense_test::Run(*full, grads)), 1e-2);
}

TEST(OnsTest, StateRoundTripsBitIdentically) {
  dense_test::ExpectRoundTrip([] { return NewOns({}, 10); }, 40, 30);
}

TEST(OnsTest, RestoreRejectsOtherBytesAndKeepsState) {
  // ADA-FULL's state is also one d x d matrix and a vector, but named
  // otherwise.
  dense_test::ExpectRejects([] { return NewOns({}, 6); }, (*NewAdaFull({}, 6))->SerializeState(),
                            (*NewOns({}, 7))->SerializeState());
}

}  // namespace
}  // namespace clickd
