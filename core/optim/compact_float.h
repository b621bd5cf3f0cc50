// Small floating-point codes for per-coordinate state (the compact
// encoding, docs/memory.md), rounded stochastically so that the stored
// value is unbiased: McMahan et al. 2013, section 4.3, store coefficients
// in 16 bits with randomized rounding for the same reason (a small update
// rounded to the nearest code would be lost every time).
//
// CompactFloat<kSigned, E, M, kMinExponent> is [sign] exponent:E
// mantissa:M, laid out as IEEE floats are: exponent field e in 1..2^E-1 is
// 2^(e - 1 + kMinExponent) * (1 + mantissa / 2^M), and e = 0 is subnormal,
// 2^kMinExponent * mantissa / 2^M (so code 0 is 0). Codes increase with
// their values, and every code decodes to a finite value: a damaged code
// cannot make a NaN. A value beyond the largest code saturates at it (as
// float states saturate at kMaxStateValue).
#ifndef CLICKD_CORE_OPTIM_COMPACT_FLOAT_H_
#define CLICKD_CORE_OPTIM_COMPACT_FLOAT_H_

#include <bit>
#include <cmath>
#include <cstdint>

namespace clickd {

template <bool kSigned, int kExponentBits, int kMantissaBits, int kMinExponent>
class CompactFloat {
 public:
  static constexpr int kBits = (kSigned ? 1 : 0) + kExponentBits + kMantissaBits;
  static constexpr uint32_t kMagnitudeMask = (1u << (kExponentBits + kMantissaBits)) - 1;
  static constexpr uint32_t kSignBit = kSigned ? 1u << (kExponentBits + kMantissaBits) : 0;
  static_assert(kBits <= 32);

  // The largest and the smallest normal magnitude.
  static double Max() { return Decode(kMagnitudeMask); }
  static double MinNormal() { return std::ldexp(1.0, kMinExponent); }

  static double Decode(uint32_t code) {
    const uint32_t field = code & kMagnitudeMask;
    const uint32_t e = field >> kMantissaBits;
    const uint64_t sign = (code & kSignBit) != 0 ? uint64_t{1} << 63 : 0;
    if (e == 0) {
      const double subnormal = std::ldexp(static_cast<double>(field), kMinExponent - kMantissaBits);
      return sign != 0 ? -subnormal : subnormal;
    }
    const uint64_t exponent = static_cast<uint64_t>(static_cast<int>(e) - 1 + kMinExponent + 1023);
    const uint64_t mantissa = static_cast<uint64_t>(field & ((1u << kMantissaBits) - 1))
                              << (52 - kMantissaBits);
    return std::bit_cast<double>(sign | exponent << 52 | mantissa);
  }

  // The code of x rounded up or down at random, with the probability that
  // makes the decoded value's mean x; `random` supplies the bits (any 64
  // uniform bits). NaN encodes as 0; a negative x as 0 when unsigned.
  static uint32_t Encode(double x, uint64_t random) {
    if (!(x == x) || x == 0 || (!kSigned && x < 0)) return 0;
    const uint64_t bits = std::bit_cast<uint64_t>(x);
    const uint32_t sign = (bits >> 63) != 0 ? kSignBit : 0;
    const int exponent = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
    if (exponent < kMinExponent) {
      // Subnormal: a fixed-point count of 2^(kMinExponent - M), rounded up
      // with the probability of the fraction (up to the smallest normal).
      const double scaled = std::ldexp(std::abs(x), kMantissaBits - kMinExponent);  // < 2^M
      const double u = static_cast<double>(random >> 11) * 0x1p-53;
      return sign | static_cast<uint32_t>(scaled + u);
    }
    constexpr int kDropped = 52 - kMantissaBits;
    // Exponent field and mantissa as one integer, so that rounding up a
    // full mantissa carries into the exponent as IEEE rounding does.
    uint64_t field = static_cast<uint64_t>(exponent - kMinExponent + 1) << 52 |
                     (bits & ((uint64_t{1} << 52) - 1));
    field += random & ((uint64_t{1} << kDropped) - 1);
    field >>= kDropped;
    if (field > kMagnitudeMask || exponent > 1023) field = kMagnitudeMask;  // saturate
    return sign | static_cast<uint32_t>(field);
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
