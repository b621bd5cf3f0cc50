// The 16-bit codes of the compact encoding: precision, range, saturation,
// and that stochastic rounding keeps the mean (the reason it is used).
#include "core/optim/compact_float.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/optim/compact_ftrl.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using Z = CompactFtrl::ZCode;
using N = CompactFtrl::NCode;

TEST(CompactFloat, EveryCodeDecodesToAFiniteValueInOrder) {
  double previous = -1;
  for (uint32_t code = 0; code <= Z::kMagnitudeMask; ++code) {
    const double v = Z::Decode(static_cast<uint16_t>(code));
    ASSERT_TRUE(std::isfinite(v));
    EXPECT_GT(v, previous) << code;
    EXPECT_EQ(Z::Decode(static_cast<uint16_t>(code | 0x8000)), -v);
    previous = v;
  }
  previous = -1;
  for (uint32_t code = 0; code <= 0xFFFF; ++code) {
    const double v = N::Decode(static_cast<uint16_t>(code));
    ASSERT_TRUE(std::isfinite(v));
    EXPECT_GT(v, previous) << code;
    previous = v;
  }
}

TEST(CompactFloat, EncodesWithinOneStepOfTheValue) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    const double x = std::ldexp(static_cast<double>(rng() % 1000000 + 1) / 1e6,
                                static_cast<int>(rng() % 50) - 25) *
                     (rng() % 2 ? 1 : -1);
    // Relative steps above the smallest normal, absolute ones below it.
    const double z = Z::Decode(Z::Encode(x, rng()));
    EXPECT_LE(std::abs(z - x), std::max(std::abs(x), Z::MinNormal()) * 0x1p-9) << x;
    const double n = N::Decode(N::Encode(std::abs(x), rng()));
    EXPECT_LE(std::abs(n - std::abs(x)), std::max(std::abs(x), N::MinNormal()) * 0x1p-10) << x;
    // Rounding goes to one of the two neighbouring codes.
    const uint16_t down = Z::Encode(x, 0);
    const uint16_t up = Z::Encode(x, ~uint64_t{0});
    EXPECT_LE(up - down, 1) << x;
  }
}

// A value between two codes becomes either, with the probabilities that
// keep its mean: so an update smaller than a code's step is not lost.
TEST(CompactFloat, StochasticRoundingKeepsTheMean) {
  std::mt19937_64 rng(2);
  for (double x : {1.0 + 0x1p-12, 1000.3, -0.0123, 3e-10, 1e-11}) {
    double sum = 0;
    constexpr int kDraws = 200000;
    for (int i = 0; i < kDraws; ++i) sum += Z::Decode(Z::Encode(x, rng()));
    EXPECT_NEAR(sum / kDraws, x, std::abs(x) * 2e-4) << x;
  }
  // n accumulating tiny g^2, far below its step, still grows on average.
  double n = 1000;
  double exact = 1000;
  uint16_t code = N::Encode(n, 0);
  for (int i = 0; i < 100000; ++i) {
    code = N::Encode(N::Decode(code) + 0.01, rng());
    exact += 0.01;
  }
  EXPECT_NEAR(N::Decode(code), exact, exact * 0.01);
}

TEST(CompactFloat, SaturatesAndZeroes) {
  EXPECT_EQ(Z::Decode(Z::Encode(1e30, 0)), Z::Max());
  EXPECT_EQ(Z::Decode(Z::Encode(-1e30, 0)), -Z::Max());
  EXPECT_EQ(Z::Decode(Z::Encode(std::numeric_limits<double>::infinity(), 0)), Z::Max());
  EXPECT_EQ(Z::Encode(std::numeric_limits<double>::quiet_NaN(), 0), 0);
  EXPECT_EQ(Z::Encode(0.0, 0), 0);
  EXPECT_EQ(N::Encode(-1.0, 0), 0);
  EXPECT_GT(Z::Max(), 8e9);
  EXPECT_GT(N::Max(), 1.3e8);
  // Below the smallest normal: subnormal codes, steps of 2^-9 of it.
  EXPECT_EQ(Z::Decode(Z::Encode(Z::MinNormal() / 4, 0)), Z::MinNormal() / 4);
  EXPECT_EQ(N::Decode(N::Encode(N::MinNormal() / 1024, 0)), N::MinNormal() / 1024);
}

}  // namespace
}  // namespace clickd
