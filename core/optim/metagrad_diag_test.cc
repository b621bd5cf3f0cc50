// MetaGradDiag against a scalar double-precision reference written here from
// the slides' formulas with d = 1, and against the full-matrix MetaGrad with
// d = 1 and the same 21 rates. MetaGradDiag keeps float state, so weights
// agree within kTol absolute (domain [-1, 1] or smaller).
#include "core/optim/metagrad_diag.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <type_traits>
#include <vector>

#include "core/optim/dense/metagrad.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using ::testing::HasSubstr;

constexpr double kTol = 1e-5;
constexpr int kK = MetaGradDiag::kSlaves;

// One coordinate of MetaGrad, straight from the slides, in double.
class ReferenceScalar {
 public:
  ReferenceScalar(double diameter, double gradient_bound) : d_(diameter) {
    for (int i = 0; i < kK; ++i) {
      eta_[i] = std::pow(2.0, -i) / (5 * diameter * gradient_bound);
      prior_[i] = (kK + 1.0) / kK / ((i + 1.0) * (i + 2.0));
    }
  }

  double weight() const { return w_; }

  void Update(double g) {
    sum_g2_ += g * g;
    double num = 0, den = 0;
    for (int i = 0; i < kK; ++i) {
      const double eta = eta_[i];
      const double r = (slave_w_[i] - w_) * g;
      loss_[i] += eta * r + eta * eta * r * r;
      const double sigma = 1 / (1 / (d_ * d_) + 2 * eta * eta * sum_g2_);
      const double tilde = slave_w_[i] - eta * (1 + 2 * eta * r) * sigma * g;
      slave_w_[i] = std::max(-d_ / 2, std::min(d_ / 2, tilde));
    }
    for (int i = 0; i < kK; ++i) {
      const double pi_eta = prior_[i] * std::exp(-loss_[i]) * eta_[i];
      num += pi_eta * slave_w_[i];
      den += pi_eta;
    }
    w_ = num / den;
  }

 private:
  double d_;
  double eta_[kK], prior_[kK], loss_[kK] = {}, slave_w_[kK] = {};
  double sum_g2_ = 0, w_ = 0;
};

struct Case {
  double diameter;
  double gradient_bound;
  double mean;     // of the gradient; 0: no drift, large: slaves clip
  int flip_every;  // > 0: the mean changes sign every so many rounds
  uint32_t seed;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "D=" << c.diameter << " G=" << c.gradient_bound << " mean=" << c.mean
      << " flip_every=" << c.flip_every << " seed=" << c.seed;
}

// g_t uniform in +-mean +- G, clipped to [-G, G].
std::vector<double> Stream(const Case& c, int n) {
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> g(n);
  for (int t = 0; t < n; ++t) {
    const double mean = (c.flip_every > 0 && (t / c.flip_every) % 2 == 1) ? -c.mean : c.mean;
    g[t] = std::clamp(mean + c.gradient_bound * unit(rng), -c.gradient_bound, c.gradient_bound);
  }
  return g;
}

class MetaGradDiagStreamTest : public ::testing::TestWithParam<Case> {};

TEST_P(MetaGradDiagStreamTest, MatchesScalarReference) {
  const Case& c = GetParam();
  const MetaGradDiag opt({.diameter = c.diameter, .gradient_bound = c.gradient_bound});
  MetaGradDiag::State state;
  ReferenceScalar ref(c.diameter, c.gradient_bound);
  const RoundContext round;
  int at_boundary = 0;
  for (double g : Stream(c, 400)) {
    opt.Apply(state, g, round);
    ref.Update(g);
    ASSERT_NEAR(opt.Weight(state, round), ref.weight(), kTol);
    at_boundary += std::abs(state.slave_w[0]) == static_cast<float>(c.diameter / 2);
  }
  if (c.mean != 0) {
    EXPECT_GT(at_boundary, 0) << "no slave ever clipped";
  }
}

// The full-matrix version with d = 1 and the same grid is the same
// algorithm: Sigma is a scalar and the Sigma^-1-norm projection a clip.
TEST_P(MetaGradDiagStreamTest, AgreesWithFullMetaGradInOneDimension) {
  const Case& c = GetParam();
  const MetaGradDiag diag({.diameter = c.diameter, .gradient_bound = c.gradient_bound});
  MetaGradDiag::State state;
  auto full = NewMetaGrad(
      {.diameter = c.diameter, .gradient_bound = c.gradient_bound, .num_slaves = kK}, 1);
  const RoundContext round;
  for (double g : Stream(c, 400)) {
    diag.Apply(state, g, round);
    full->Update(Eigen::VectorXd::Constant(1, g));
    ASSERT_NEAR(diag.Weight(state, round), full->weights()[0], kTol);
  }
}

INSTANTIATE_TEST_SUITE_P(MetaGradStreams, MetaGradDiagStreamTest,
                         ::testing::Values(Case{2.0, 1.0, 0.0, 0, 1}, Case{2.0, 1.0, 0.4, 0, 2},
                                           Case{1.0, 3.0, -2.0, 0, 3}, Case{0.2, 0.5, 0.3, 0, 4},
                                           Case{2.0, 1.0, 0.8, 50, 5}, Case{4.0, 2.0, 1.5, 20, 6}));

// The slides' example: f_t(w) = |w - x_t| with a margin. The weight should
// settle at the median 1/2.
TEST(MetaGradDiag, FindsTheMedianOfAbsoluteLoss) {
  const MetaGradDiag opt({.diameter = 2.0, .gradient_bound = 1.0});
  MetaGradDiag::State state;
  const RoundContext round;
  std::mt19937_64 rng(11);
  std::bernoulli_distribution upper(0.7);
  for (int t = 0; t < 3000; ++t) {
    const double x = upper(rng) ? 0.5 : -0.5;
    const double w = opt.Weight(state, round);
    opt.Apply(state, w > x ? 1.0 : (w < x ? -1.0 : 0.0), round);
  }
  EXPECT_NEAR(opt.Weight(state, round), 0.5, 0.02);
}

TEST(MetaGradDiag, ZeroGradientChangesNothing) {
  const MetaGradDiag opt({});
  MetaGradDiag::State state;
  const RoundContext round;
  opt.Apply(state, 0.7, round);
  opt.Apply(state, -0.2, round);
  const MetaGradDiag::State before = state;
  opt.Apply(state, 0.0, round);
  EXPECT_EQ(std::memcmp(&before, &state, sizeof(state)), 0);
}

TEST(MetaGradDiag, StateIsSmallAndStartsAtZero) {
  static_assert(std::is_trivially_copyable_v<MetaGradDiag::State>);
  EXPECT_EQ(sizeof(MetaGradDiag::State), 176u);  // (2 + 2 * 21) floats
  EXPECT_EQ(kK, 21);                             // ceil(log2(2^40) / 2) + 1
  const MetaGradDiag opt({});
  EXPECT_EQ(opt.Weight(MetaGradDiag::State{}, RoundContext{}), 0.0);
}

TEST(MetaGradDiag, DefaultsArePinnedAndValidated) {
  const MetaGradDiagParams params;
  // docs/optimizers.md, "Defaults on click data".
  EXPECT_EQ(params.diameter, 1.0);
  EXPECT_EQ(params.gradient_bound, std::sqrt(40.0));
  EXPECT_TRUE(ValidateMetaGradDiagParams(params).ok());
  absl::Status s = ValidateMetaGradDiagParams({.diameter = 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("metagrad_diag.diameter is 0; must be finite and > 0"));
  s = ValidateMetaGradDiagParams({.gradient_bound = INFINITY});
  EXPECT_THAT(s.message(), HasSubstr("metagrad_diag.gradient_bound is inf; must be finite"));
}

}  // namespace
}  // namespace clickd
