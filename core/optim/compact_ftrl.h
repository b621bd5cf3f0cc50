// CompactFtrl: FTRL-Proximal (core/optim/ftrl.h) with each coordinate's z
// and n held in 16 bits each (core/optim/compact_float.h): 4 bytes of state
// instead of 8, for the compact encoding (ModelConfig memory.encoding,
// docs/memory.md). The arithmetic of a step is FtrlProximal's, on the
// decoded values; only the stored results are rounded, stochastically,
// with bits drawn from the key and the round (RoundingBits), so equal
// steps still give equal states. The rounding's effect on learning is
// measured, not assumed: docs/memory.md, "What the compact encoding costs".
#ifndef CLICKD_CORE_OPTIM_COMPACT_FTRL_H_
#define CLICKD_CORE_OPTIM_COMPACT_FTRL_H_

#include <cstdint>

#include "core/optim/compact_float.h"
#include "core/optim/ftrl.h"
#include "core/optim/round.h"

namespace clickd {

class CompactFtrl {
 public:
  // z: signed, normal from 2^-30 to ~2^33 (8.6e9); n: from 2^-36 to ~2^27
  // (1.3e8): a coordinate's n stops growing there, so its rate stops
  // falling at alpha / (beta + 11585); subnormal codes below.
  using ZCode = CompactFloat</*kSigned=*/true, /*kMinExponent=*/-30>;
  using NCode = CompactFloat</*kSigned=*/false, /*kMinExponent=*/-36>;

  struct State {
    uint16_t z_code = 0;
    uint16_t n_code = 0;
    // Codes saturate as they encode: SaturateState leaves them alone.
    static constexpr bool kSelfSaturating = true;
  };
  using Params = FtrlParams;

  explicit CompactFtrl(const Params& params) : ftrl_(params) {}

  static FtrlProximal::State Decode(const State& s) {
    return {static_cast<float>(ZCode::Decode(s.z_code)),
            static_cast<float>(NCode::Decode(s.n_code))};
  }

  double Weight(const State& s, const RoundContext& round) const {
    return ftrl_.Weight(Decode(s), round);
  }

  double LearningRate(const State& s, const RoundContext& round) const {
    return ftrl_.LearningRate(Decode(s), round);
  }

  // The state's sum of g^2, for the budget's eviction order.
  static double Accumulator(const State& s) { return NCode::Decode(s.n_code); }

  bool WeightIndependentOfRound() const { return ftrl_.WeightIndependentOfRound(); }

  // One FTRL step of coordinate `key` at round `round.t`, given its weight
  // w = Weight(s, round) (as FtrlProximal::ApplyWithWeight).
  void ApplyRounded(State& s, double g, double w, uint64_t key, const RoundContext& round) const {
    FtrlProximal::State f = Decode(s);
    ftrl_.ApplyWithWeight(f, g, w);
    const uint64_t bits = RoundingBits(key, round.t);
    s.z_code = ZCode::Encode(f.z, bits);
    // Other bits for n: the two roundings must not move together.
    s.n_code = NCode::Encode(f.n, RoundingBits(bits, round.t));
  }

 private:
  FtrlProximal ftrl_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_COMPACT_FTRL_H_
