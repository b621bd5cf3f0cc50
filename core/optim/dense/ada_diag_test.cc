// ADA-DIAG against a plain per-coordinate loop written from seed 002's
// section 2 (H_t = delta I + diag(G_t)^{1/2}, eqs. (1) and (2)).
#include "core/optim/dense/ada_diag.h"

#include <cmath>
#include <vector>

#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/dense_test_util.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using dense_test::MaxRelativeGap;
using dense_test::RandomGradients;

constexpr double kTol = 1e-12;  // same arithmetic, different order

// beta_{t+1,j} = -eta gbar_{t,j} / (delta + sqrt(sum_{i<=t} g_{i,j}^2))       (1)
// beta_{t+1,j} = beta_{t,j} - eta g_{t,j} / (delta + sqrt(sum g_{i,j}^2))     (2)
std::vector<Eigen::VectorXd> Reference(const AdaDiagParams& p, bool dual_averaging,
                                       const std::vector<Eigen::VectorXd>& grads) {
  const int d = static_cast<int>(grads[0].size());
  std::vector<double> sum_sq(d, 0.0), gbar(d, 0.0), beta(d, 0.0);
  std::vector<Eigen::VectorXd> out;
  for (const Eigen::VectorXd& g : grads) {
    Eigen::VectorXd w(d);
    for (int j = 0; j < d; ++j) {
      sum_sq[j] += g(j) * g(j);
      gbar[j] += g(j);
      const double h = p.delta + std::sqrt(sum_sq[j]);
      beta[j] = dual_averaging ? -p.eta * gbar[j] / h : beta[j] - p.eta * g(j) / h;
      w(j) = beta[j];
    }
    out.push_back(w);
  }
  return out;
}

TEST(AdaDiagTest, DefaultsArePinned) {
  AdaDiagParams p;
  EXPECT_EQ(p.eta, 0.1);
  EXPECT_EQ(p.delta, 1.0);
}

TEST(AdaDiagTest, ValidationNamesFieldAndLimit) {
  EXPECT_TRUE(ValidateAdaDiagParams({}, 3).ok());
  absl::Status s = ValidateAdaDiagParams({.eta = 0}, 3);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("eta is 0; must be finite and > 0"), std::string::npos) << s;
  s = ValidateAdaDiagParams({.delta = NAN}, 3);
  EXPECT_NE(s.message().find("delta is nan"), std::string::npos) << s;
  s = ValidateAdaDiagParams({}, 0);
  EXPECT_NE(s.message().find("dim is 0; must be >= 1"), std::string::npos) << s;
  EXPECT_FALSE(NewAdaDiag({.eta = -1}, 3).ok());
  EXPECT_FALSE(NewAdaDiagDa({}, 0).ok());
}

TEST(AdaDiagTest, FirstStepByHand) {
  // g_1 = (3, -4): H_1 = delta + |g_1,j|, beta_2 = -eta g / H in both forms.
  const AdaDiagParams p{.eta = 0.5, .delta = 1.0};
  Eigen::VectorXd g(2);
  g << 3, -4;
  for (bool da : {false, true}) {
    auto opt = *(da ? NewAdaDiagDa(p, 2) : NewAdaDiag(p, 2));
    opt->Update(g);
    EXPECT_DOUBLE_EQ(opt->weights()(0), -0.5 * 3 / 4);
    EXPECT_DOUBLE_EQ(opt->weights()(1), 0.5 * 4 / 5);
  }
}

TEST(AdaDiagTest, MatchesReferenceBothForms) {
  for (int d : {1, 7, 30}) {
    const auto grads = RandomGradients(300, d, d, 100 + d);
    for (const AdaDiagParams& p : {AdaDiagParams{}, AdaDiagParams{.eta = 2, .delta = 1e-3}}) {
      auto md = *NewAdaDiag(p, d);
      auto da = *NewAdaDiagDa(p, d);
      EXPECT_LT(MaxRelativeGap(dense_test::Run(*md, grads), Reference(p, false, grads)), kTol);
      EXPECT_LT(MaxRelativeGap(dense_test::Run(*da, grads), Reference(p, true, grads)), kTol);
      EXPECT_EQ(md->rounds(), 300u);
    }
  }
}

TEST(AdaDiagTest, StateRoundTripsBitIdentically) {
  for (bool da : {false, true}) {
    dense_test::ExpectRoundTrip([da] { return da ? NewAdaDiagDa({}, 12) : NewAdaDiag({}, 12); }, 40,
                                30);
  }
}

TEST(AdaDiagTest, RestoreRejectsOtherBytesAndKeepsState) {
  const std::string full = (*NewAdaFull({}, 6))->SerializeState();
  const std::string da = (*NewAdaDiagDa({}, 6))->SerializeState();
  dense_test::ExpectRejects([] { return NewAdaDiag({}, 6); }, da,
                            (*NewAdaDiag({}, 5))->SerializeState());
  dense_test::ExpectRejects([] { return NewAdaDiagDa({}, 6); }, full,
                            (*NewAdaDiagDa({}, 7))->SerializeState());
}

TEST(AdaDiagTest, StateBytesIsLinearInDim) {
  EXPECT_EQ((*NewAdaDiag({}, 100))->StateBytes(), 2u * 100 * 8);
  EXPECT_EQ((*NewAdaDiagDa({}, 100))->StateBytes(), 3u * 100 * 8);
}

}  // namespace
}  // namespace clickd
