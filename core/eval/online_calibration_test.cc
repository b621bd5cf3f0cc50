#include "core/eval/online_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Prediction {
  double p;
  double label;
};

// Predictions p log-uniform on [1e-3, 0.5] whose true CTR is
// min(1, gamma p^kappa) (below 1 throughout for the settings used here).
std::vector<Prediction> Miscalibrated(int n, double gamma, double kappa, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Prediction> out;
  for (int i = 0; i < n; ++i) {
    const double p = std::exp(std::log(1e-3) + unit(rng) * (std::log(0.5) - std::log(1e-3)));
    const double ctr = std::min(1.0, gamma * std::pow(p, kappa));
    out.push_back({p, unit(rng) < ctr ? 1.0 : 0.0});
  }
  return out;
}

OnlineCalibrationOptions Options(double half_life, uint64_t refit_every, double min_positives) {
  OnlineCalibrationOptions o;
  o.half_life = half_life;
  o.refit_every = refit_every;
  o.min_positives = min_positives;
  return o;
}

void AddAll(OnlineCalibrator& c, const std::vector<Prediction>& data) {
  for (const Prediction& d : data) ASSERT_TRUE(c.Add(d.p, d.label).ok());
}

TEST(OnlineCalibrator, RecoversGammaAndKappa) {
  auto c = *OnlineCalibrator::Create(Options(1e7, 10000, 100));
  AddAll(c, Miscalibrated(400000, 2.0, 1.3, 1));
  ASSERT_TRUE(c.fitted());
  // About 30,000 positives: the standard errors are about 1 % of gamma and
  // 0.005 of kappa; the tolerances (3 % and 0.02) allow for them and for the
  // binning (about 0.3 % of gamma). This seed fits 1.979 and 1.295.
  EXPECT_NEAR(c.gamma(), 2.0, 0.06);
  EXPECT_NEAR(c.kappa(), 1.3, 0.02);
  EXPECT_NEAR(c.Apply(0.1), 2.0 * std::pow(0.1, 1.3), 0.004);
}

TEST(OnlineCalibrator, CalibratedDataStaysNearTheIdentity) {
  auto c = *OnlineCalibrator::Create(Options(1e7, 5000, 100));
  AddAll(c, Miscalibrated(200000, 1.0, 1.0, 2));
  ASSERT_TRUE(c.fitted());
  EXPECT_NEAR(c.gamma(), 1.0, 0.06);
  EXPECT_NEAR(c.kappa(), 1.0, 0.03);
}

TEST(OnlineCalibrator, OneBinFitsGammaAlone) {
  // Every prediction 0.1 with true CTR 0.2: kappa cannot be told apart from
  // gamma, so it stays 1 and gamma takes the whole correction.
  auto c = *OnlineCalibrator::Create(Options(1e6, 1000, 10));
  std::mt19937_64 rng(10);
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(c.Add(0.1, rng() % 5 == 0 ? 1 : 0).ok());
  ASSERT_TRUE(c.fitted());
  EXPECT_EQ(c.kappa(), 1.0);
  EXPECT_NEAR(c.gamma(), 2.0, 0.06);
  EXPECT_NEAR(c.Apply(0.1), 0.2, 0.006);
}

TEST(OnlineCalibrator, ForgettingTracksDrift) {
  auto c = *OnlineCalibrator::Create(Options(20000, 2000, 100));
  AddAll(c, Miscalibrated(200000, 2.0, 1.3, 3));
  EXPECT_NEAR(c.kappa(), 1.3, 0.06);
  AddAll(c, Miscalibrated(300000, 0.5, 1.0, 4));
  // 15 half-lives later the first regime weighs 2^-15.
  EXPECT_NEAR(c.gamma(), 0.5, 0.06);
  EXPECT_NEAR(c.kappa(), 1.0, 0.06);
}

TEST(OnlineCalibrator, IdentityUntilTheMinimumOfPositives) {
  auto c = *OnlineCalibrator::Create(Options(1e6, 10, 50));
  int positives = 0;
  for (const Prediction& d : Miscalibrated(100000, 2.0, 1.3, 5)) {
    ASSERT_TRUE(c.Add(d.p, d.label).ok());
    positives += d.label == 1;
    if (positives < 50) {
      ASSERT_FALSE(c.fitted());
      EXPECT_EQ(c.Apply(0.03), 0.03);
      EXPECT_EQ(c.Apply(0.0), 0.0);
    }
    if (positives >= 50 && c.examples() % 10 == 0) break;
  }
  // The next refit boundary after the 50th positive fits.
  EXPECT_TRUE(c.fitted());
  EXPECT_NE(c.Apply(0.03), 0.03);
}

TEST(OnlineCalibrator, OutputIsInsideTheUnitInterval) {
  auto c = *OnlineCalibrator::Create(Options(1e6, 1000, 10));
  AddAll(c, Miscalibrated(50000, 2.0, 1.3, 6));
  ASSERT_TRUE(c.fitted());
  for (double p : {0.0, 1e-300, 1e-9, 0.5, 0.999, 1.0}) {
    const double q = c.Apply(p);
    EXPECT_GT(q, 0) << p;
    EXPECT_LT(q, 1) << p;
  }
}

TEST(OnlineCalibrator, SameInputsSameBytesAndRoundTripContinuesIdentically) {
  const auto first = Miscalibrated(30000, 2.0, 1.3, 7), rest = Miscalibrated(30000, 2.0, 1.3, 8);
  auto a = *OnlineCalibrator::Create(Options(5000, 1000, 20));
  auto b = *OnlineCalibrator::Create(Options(5000, 1000, 20));
  AddAll(a, first);
  AddAll(b, first);
  EXPECT_EQ(a.Serialize(), b.Serialize());
  // Mid-way between refits, so the counter since the last fit matters.
  ASSERT_TRUE(a.Add(0.2, 1).ok());
  auto restored = OnlineCalibrator::Deserialize(a.Serialize());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->Serialize(), a.Serialize());
  AddAll(a, rest);
  AddAll(*restored, rest);
  EXPECT_EQ(restored->Serialize(), a.Serialize());
  EXPECT_EQ(restored->gamma(), a.gamma());
  EXPECT_EQ(restored->kappa(), a.kappa());
  EXPECT_EQ(restored->Apply(0.05), a.Apply(0.05));
}

TEST(OnlineCalibrator, DamagedBytesAreRefused) {
  auto c = *OnlineCalibrator::Create(Options(5000, 1000, 20));
  AddAll(c, Miscalibrated(5000, 2.0, 1.3, 9));
  const std::string good = c.Serialize();
  ASSERT_TRUE(OnlineCalibrator::Deserialize(good).ok());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    EXPECT_EQ(OnlineCalibrator::Deserialize(bad).status().code(), absl::StatusCode::kDataLoss) << i;
  }
  for (size_t n : {size_t{0}, size_t{3}, good.size() - 1}) {
    EXPECT_EQ(OnlineCalibrator::Deserialize(good.substr(0, n)).status().code(),
              absl::StatusCode::kDataLoss)
        << n;
  }
  EXPECT_EQ(OnlineCalibrator::Deserialize(good + "x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(OnlineCalibrator, BadInputsAreRefusedAndChangeNothing) {
  auto c = *OnlineCalibrator::Create(Options(5000, 1, 0));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::string before = c.Serialize();
  EXPECT_FALSE(c.Add(nan, 1).ok());
  EXPECT_FALSE(c.Add(-0.1, 1).ok());
  EXPECT_FALSE(c.Add(1.5, 1).ok());
  EXPECT_FALSE(c.Add(0.5, nan).ok());
  EXPECT_FALSE(c.Add(0.5, -1).ok());
  EXPECT_FALSE(c.Add(0.5, 0.5).ok());
  EXPECT_FALSE(c.Add(0.5, 1, nan).ok());
  EXPECT_FALSE(c.Add(0.5, 1, -1).ok());
  EXPECT_FALSE(c.Add(0.5, 1, inf).ok());
  EXPECT_EQ(c.Serialize(), before);
  EXPECT_TRUE(std::isnan(c.Apply(nan)));
  EXPECT_TRUE(std::isnan(c.Apply(-0.5)));
  EXPECT_TRUE(std::isnan(c.Apply(2)));
  // Weight 0 is an example that teaches nothing; p = 0 and 1 are valid.
  EXPECT_TRUE(c.Add(0.5, 1, 0).ok());
  EXPECT_TRUE(c.Add(0.0, 0).ok());
  EXPECT_TRUE(c.Add(1.0, 1).ok());
  EXPECT_EQ(c.examples(), 3u);
}

TEST(OnlineCalibrator, RefusesBadOptions) {
  EXPECT_FALSE(OnlineCalibrator::Create(Options(0.5, 10, 1)).ok());
  EXPECT_FALSE(OnlineCalibrator::Create(Options(std::nan(""), 10, 1)).ok());
  EXPECT_FALSE(OnlineCalibrator::Create(Options(100, 0, 1)).ok());
  EXPECT_FALSE(OnlineCalibrator::Create(Options(100, 10, -1)).ok());
  EXPECT_TRUE(OnlineCalibrator::Create(Options(100, 10, 0)).ok());
}

}  // namespace
}  // namespace clickd
