// The codes of the compact encoding: precision, range, saturation, and that
// stochastic rounding keeps the mean (the reason it is used).
#include "core/optim/compact_float.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/optim/compact_ftrl.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using Omega = CompactFtrl::OmegaCode;
using Root = CompactFtrl::RootCode;

TEST(CompactFloat, EveryCodeDecodesToAFiniteValueInOrder) {
  double previous = -1;
  for (uint32_t code = 0; code <= Omega::kMagnitudeMask; ++code) {
    const double v = Omega::Decode(code);
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_GT(v, previous) << code;
    ASSERT_EQ(Omega::Decode(code | Omega::kSignBit), -v);
    previous = v;
  }
  previous = -1;
  for (uint32_t code = 0; code <= Root::kMagnitudeMask; ++code) {
    const double v = Root::Decode(code);
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_GT(v, previous) << code;
    previous = v;
  }
}

TEST(CompactFloat, EncodesWithinOneStepOfTheValue) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    const double x = std::ldexp(static_cast<double>(rng() % 1000000 + 1) / 1e6,
                                static_cast<int>(rng() % 35) - 25) *  // below Max()
                     (rng() % 2 ? 1 : -1);
    // Relative steps above the smallest normal, absolute ones below it.
    const double omega = Omega::Decode(Omega::Encode(x, rng()));
    EXPECT_LE(std::abs(omega - x), std::max(std::abs(x), Omega::MinNormal()) * 0x1p-13) << x;
    const double root = Root::Decode(Root::Encode(std::abs(x), rng()));
    EXPECT_LE(std::abs(root - std::abs(x)), std::max(std::abs(x), Root::MinNormal()) * 0x1p-8) << x;
    // Rounding goes to one of the two neighbouring codes.
    const uint32_t down = Omega::Encode(x, 0);
    const uint32_t up = Omega::Encode(x, ~uint64_t{0});
    EXPECT_LE(up - down, 1u) << x;
  }
}

// A value between two codes becomes either, with the probabilities that
// keep its mean: so an update smaller than a code's step is not lost.
TEST(CompactFloat, StochasticRoundingKeepsTheMean) {
  std::mt19937_64 rng(2);
  for (double x : {1.0 + 0x1p-16, 1000.3, -0.0123, 3e-7, -1e-9}) {
    double sum = 0;
    constexpr int kDraws = 200000;
    for (int i = 0; i < kDraws; ++i) sum += Omega::Decode(Omega::Encode(x, rng()));
    // Below the smallest normal a step is absolute: 2^-13 of it.
    EXPECT_NEAR(sum / kDraws, x, std::max(std::abs(x) * 1e-4, Omega::MinNormal() * 0x1p-13 / 64))
        << x;
  }
  // sqrt(n), n accumulating g^2 = 0.01 far below its step, still grows.
  double exact = 1000;
  uint32_t code = Root::Encode(std::sqrt(exact), 0);
  for (int i = 0; i < 100000; ++i) {
    const double root = Root::Decode(code);
    code = Root::Encode(std::sqrt(root * root + 0.01), rng());
    exact += 0.01;
  }
  EXPECT_NEAR(Root::Decode(code), std::sqrt(exact), std::sqrt(exact) * 0.01);
}

TEST(CompactFloat, SaturatesAndZeroes) {
  EXPECT_EQ(Omega::Decode(Omega::Encode(1e30, 0)), Omega::Max());
  EXPECT_EQ(Omega::Decode(Omega::Encode(-1e30, 0)), -Omega::Max());
  EXPECT_EQ(Omega::Decode(Omega::Encode(std::numeric_limits<double>::infinity(), 0)), Omega::Max());
  EXPECT_EQ(Omega::Encode(std::numeric_limits<double>::quiet_NaN(), 0), 0u);
  EXPECT_EQ(Omega::Encode(0.0, 0), 0u);
  EXPECT_EQ(Root::Encode(-1.0, 0), 0u);
  EXPECT_GT(Omega::Max(), 2000);
  EXPECT_GT(Root::Max(), 2e6);
  // Below the smallest normal: subnormal codes.
  EXPECT_EQ(Omega::Decode(Omega::Encode(Omega::MinNormal() / 4, 0)), Omega::MinNormal() / 4);
  EXPECT_EQ(Root::Decode(Root::Encode(Root::MinNormal() / 256, 0)), Root::MinNormal() / 256);
}

// The state's codes decode to the FTRL state they were encoded from, to
// their precision, and a coordinate never updated decodes to zeros.
TEST(CompactFtrl, StateRoundTripsToItsPrecision) {
  const CompactFtrl ftrl(FtrlParams{});
  const FtrlProximal::State zero = ftrl.Decode(CompactFtrl::State{});
  EXPECT_EQ(zero.z, 0.0f);
  EXPECT_EQ(zero.n, 0.0f);
  CompactFtrl::State s;
  const RoundContext round{.t = 1};
  ftrl.ApplyRounded(s, 0.5, 0.0, /*key=*/7, round);  // z = 0.5, n = 0.25
  const FtrlProximal::State decoded = ftrl.Decode(s);
  EXPECT_NEAR(decoded.z, 0.5, 0.5 * 0x1p-12);
  EXPECT_NEAR(decoded.n, 0.25, 0.25 * 0x1p-7);
  EXPECT_NEAR(ftrl.Weight(s, round), FtrlProximal(FtrlParams{}).Weight({0.5f, 0.25f}, round), 1e-4);
}

}  // namespace
}  // namespace clickd
