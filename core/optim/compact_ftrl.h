// CompactFtrl: FTRL-Proximal (core/optim/ftrl.h) with each coordinate's
// state in 32 bits instead of 64, for the compact encoding (ModelConfig
// memory.encoding, docs/memory.md). The arithmetic of a step is
// FtrlProximal's, on the decoded values; only the stored results are
// rounded, stochastically, with bits drawn from the key and the round
// (RoundingBits), so equal steps still give equal states.
//
// What is stored, and why (measured: docs/memory.md, "What the compact
// encoding costs"):
//   - omega = z alpha / (beta + sqrt(n)), not z: without L1 and L2 it is
//     exactly -w, so its range is the weights' (|w| up to 2048 here), while
//     z grows with sqrt(n). 19 bits: sign, 5 exponent bits, 13 mantissa
//     bits. Stochastic rounding is unbiased but not free: a coordinate
//     updated k times by steps much smaller than its precision drifts by
//     about sqrt(ulp x its path length). With 9 mantissa bits (16-bit z)
//     the frequent features of iPinYou drifted by +-0.07 in weight and the
//     held-back logloss moved by 3-8 %; 13 bits keep it within ~0.5 %.
//   - s = sqrt(n), not n: the rate alpha / (beta + s) needs s, whose
//     relative error is half n's, and its range is half as many binades.
//     13 bits: 5 exponent bits, 8 mantissa bits; from 2^-10 (n = 1e-6,
//     negligible beside beta) to 2^21 (n = 4e12: no click stream gets there).
#ifndef CLICKD_CORE_OPTIM_COMPACT_FTRL_H_
#define CLICKD_CORE_OPTIM_COMPACT_FTRL_H_

#include <cmath>
#include <cstdint>

#include "core/optim/compact_float.h"
#include "core/optim/ftrl.h"
#include "core/optim/round.h"

namespace clickd {

class CompactFtrl {
 public:
  using OmegaCode = CompactFloat</*kSigned=*/true, 5, 13, /*kMinExponent=*/-20>;
  using RootCode = CompactFloat</*kSigned=*/false, 5, 8, /*kMinExponent=*/-10>;
  static_assert(OmegaCode::kBits + RootCode::kBits == 32);

  struct State {
    // omega's code in the high 19 bits, s's in the low 13.
    uint32_t bits = 0;
    // Codes saturate as they encode: SaturateState leaves them alone.
    static constexpr bool kSelfSaturating = true;
  };
  using Params = FtrlParams;

  explicit CompactFtrl(const Params& params) : ftrl_(params), p_(params) {}

  // The FTRL state the codes stand for.
  FtrlProximal::State Decode(const State& s) const {
    const double root = RootCode::Decode(s.bits & kRootMask);
    const double omega = OmegaCode::Decode(s.bits >> RootCode::kBits);
    return {static_cast<float>(omega * (p_.beta + root) / p_.alpha),
            static_cast<float>(root * root)};
  }

  double Weight(const State& s, const RoundContext& round) const {
    return ftrl_.Weight(Decode(s), round);
  }

  double LearningRate(const State& s, const RoundContext& round) const {
    return ftrl_.LearningRate(Decode(s), round);
  }

  // The state's sum of g^2, for the budget's eviction order.
  static double Accumulator(const State& s) {
    const double root = RootCode::Decode(s.bits & kRootMask);
    return root * root;
  }

  bool WeightIndependentOfRound() const { return ftrl_.WeightIndependentOfRound(); }

  // One FTRL step of coordinate `key` at round `round.t`, given its weight
  // w = Weight(s, round) (as FtrlProximal::ApplyWithWeight).
  void ApplyRounded(State& s, double g, double w, uint64_t key, const RoundContext& round) const {
    FtrlProximal::State f = Decode(s);
    ftrl_.ApplyWithWeight(f, g, w);
    const uint64_t bits = RoundingBits(key, round.t);
    const uint32_t root_code = RootCode::Encode(std::sqrt(static_cast<double>(f.n)), bits);
    // omega against the stored root, so that decoding gives back z's mean.
    // Other bits for omega: the two roundings must not move together.
    const double root = RootCode::Decode(root_code);
    const uint32_t omega_code =
        OmegaCode::Encode(f.z * p_.alpha / (p_.beta + root), RoundingBits(bits, round.t));
    s.bits = omega_code << RootCode::kBits | root_code;
  }

 private:
  static constexpr uint32_t kRootMask = (1u << RootCode::kBits) - 1;

  FtrlProximal ftrl_;
  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_COMPACT_FTRL_H_
