// 16-bit floating-point codes for per-coordinate state (the compact
// encoding, docs/memory.md), rounded stochastically so that the stored
// value is unbiased: McMahan et al. 2013, section 4.3, store coefficients
// in 16 bits with randomized rounding for the same reason (a small update
// rounded to the nearest code would be lost every time).
//
// A code is [sign] exponent:6 mantissa:M, with M = 9 for signed values and
// 10 for non-negative ones, laid out as IEEE floats are: field e in 1..63 is
// 2^(e - 1 + min_exponent) * (1 + mantissa / 2^M), and e = 0 is subnormal,
// 2^min_exponent * mantissa / 2^M (so code 0 is 0). A code keeps 2^-10
// (signed) or 2^-11 relative precision over 63 binades, codes increase
// with their values, and every code decodes to a finite value: a damaged
// code cannot make a NaN. A value beyond the largest code saturates at it
// (as float states saturate at kMaxStateValue).
#ifndef CLICKD_CORE_OPTIM_COMPACT_FLOAT_H_
#define CLICKD_CORE_OPTIM_COMPACT_FLOAT_H_

#include <bit>
#include <cmath>
#include <cstdint>

namespace clickd {

template <bool kSigned, int kMinExponent>
class CompactFloat {
 public:
  static constexpr int kMantissaBits = kSigned ? 9 : 10;
  static constexpr int kExponentBits = 6;
  static constexpr uint32_t kMagnitudeMask = (1u << (kExponentBits + kMantissaBits)) - 1;

  // The largest and the smallest nonzero magnitude.
  static double Max() { return Decode(static_cast<uint16_t>(kMagnitudeMask)); }
  static double MinNormal() { return std::ldexp(1.0, kMinExponent); }

  static double Decode(uint16_t code) {
    const uint32_t field = code & kMagnitudeMask;
    const uint32_t e = field >> kMantissaBits;
    const double sign_factor = kSigned && (code >> 15) ? -1.0 : 1.0;
    if (e == 0)
      return sign_factor * std::ldexp(static_cast<double>(field), kMinExponent - kMantissaBits);
    const uint64_t exponent = static_cast<uint64_t>(static_cast<int>(e) - 1 + kMinExponent + 1023);
    const uint64_t mantissa = static_cast<uint64_t>(field & ((1u << kMantissaBits) - 1))
                              << (52 - kMantissaBits);
    const uint64_t sign = kSigned ? static_cast<uint64_t>(code >> 15) << 63 : 0;
    return std::bit_cast<double>(sign | exponent << 52 | mantissa);
  }

  // The code of x rounded up or down at random, with the probability that
  // makes the decoded value's mean x; `random` supplies the bits (any 64
  // uniform bits). NaN encodes as 0; a negative x as 0 when unsigned.
  static uint16_t Encode(double x, uint64_t random) {
    if (!(x == x) || x == 0 || (!kSigned && x < 0)) return 0;
    const uint64_t bits = std::bit_cast<uint64_t>(x);
    const uint16_t sign = kSigned ? static_cast<uint16_t>((bits >> 63) << 15) : 0;
    const double magnitude = std::abs(x);
    const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
    if (exponent < kMinExponent) {
      // Subnormal: a fixed-point count of 2^(min_exponent - M), rounded up
      // with the probability of the fraction (up to the smallest normal).
      const double scaled = std::ldexp(magnitude, kMantissaBits - kMinExponent);  // < 2^M
      const double u = static_cast<double>(random >> 11) * 0x1p-53;
      return static_cast<uint16_t>(sign | static_cast<uint32_t>(scaled + u));
    }
    constexpr int kDropped = 52 - kMantissaBits;
    // Exponent field and mantissa as one integer, so that rounding up a
    // full mantissa carries into the exponent as IEEE rounding does.
    uint64_t field = static_cast<uint64_t>(exponent - kMinExponent + 1) << 52 |
                     (bits & ((uint64_t{1} << 52) - 1));
    field += random & ((uint64_t{1} << kDropped) - 1);
    field >>= kDropped;
    if (field > kMagnitudeMask || exponent > 1023) field = kMagnitudeMask;  // saturate
    return static_cast<uint16_t>(sign | field);
  }
};

// 64 bits for one coordinate's rounding at one step: a hash (SplitMix64's
// finalizer) of the key and the round, so the same steps round the same
// way on every replica and after every replay.
inline uint64_t RoundingBits(uint64_t key, uint64_t round) {
  uint64_t x = key ^ (round * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_COMPACT_FLOAT_H_
