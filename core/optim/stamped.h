// Stamped<Inner>: an FTRL optimizer (FtrlProximal or CompactFtrl) whose
// per-coordinate state also records the epoch of the coordinate's last
// step, for TTL eviction (ModelConfig.memory.ttl_rounds; docs/memory.md,
// "TTL eviction"). The model writes the stamp at every step and evicts
// coordinates whose stamp is too old (core/model/ttl_schedule.h).
//
// The stamp lives in the state because it must be exact: a coordinate
// learned within the TTL is never evicted, and one that is not is always
// evicted, whatever other keys do. (A shared table of marks, a few bits per
// hashed bucket, was tried first: a stale key sharing a bucket with a key
// learned every epoch was kept forever, and 6 % of a stream's new keys
// never left.) The cost is the state's size: 12 bytes for float FTRL (a
// 24-byte slot instead of 16) and 8 for the compact encoding (a 12-byte
// slot instead of 8). Models without a TTL keep Inner as it is.
//
// Every step of Inner is unchanged, so a model with a TTL learns exactly as
// one without until its first eviction.
#ifndef CLICKD_CORE_OPTIM_STAMPED_H_
#define CLICKD_CORE_OPTIM_STAMPED_H_

#include <cstdint>

#include "core/optim/compact_ftrl.h"
#include "core/optim/ftrl.h"
#include "core/optim/numeric_bounds.h"
#include "core/optim/round.h"

namespace clickd {

template <typename Inner>
class Stamped {
  static_assert(std::is_same_v<Inner, FtrlProximal> || std::is_same_v<Inner, CompactFtrl>,
                "TTL stamps are kept for FTRL's states");

 public:
  // Stamps count epochs modulo 2^24, so that a stamp's bytes read as a
  // finite float (checks such as StateIsFinite see every 4 bytes as one);
  // ages are at most a few epochs, so the modulus never confuses them.
  static constexpr uint32_t kStampModulus = 1u << 24;

  struct State {
    typename Inner::State inner;
    uint32_t stamp = 0;  // epoch of the last step, modulo kStampModulus
    // Inner's floats are saturated by the steps below; the stamp is no float.
    static constexpr bool kSelfSaturating = true;
  };
  using Params = typename Inner::Params;

  explicit Stamped(const Params& params) : inner_(params) {}

  // Epochs from `stamp` to `now` (both modulo kStampModulus).
  static uint32_t Age(uint32_t stamp, uint32_t now) { return (now - stamp) & (kStampModulus - 1); }

  double Weight(const State& s, const RoundContext& round) const {
    return inner_.Weight(s.inner, round);
  }
  double LearningRate(const State& s, const RoundContext& round) const {
    return inner_.LearningRate(s.inner, round);
  }
  static double Accumulator(const State& s) {
    if constexpr (std::is_same_v<Inner, CompactFtrl>) {
      return CompactFtrl::Accumulator(s.inner);
    } else {
      return s.inner.n;
    }
  }
  bool WeightIndependentOfRound() const { return inner_.WeightIndependentOfRound(); }

  // FtrlProximal's steps, each followed by the saturation LinearModel
  // applies to an unstamped state.
  void Apply(State& s, double g,
             const RoundContext& round) const requires std::is_same_v<Inner, FtrlProximal> {
    inner_.Apply(s.inner, g, round);
    SaturateState(s.inner);
  }
  double WeightWithRoot(const State& s, const RoundContext& round, FtrlProximal::Root* root)
      const requires std::is_same_v<Inner, FtrlProximal> {
    return inner_.WeightWithRoot(s.inner, round, root);
  }
  template <typename StateOf>
  void WeightsWithRoots(
      size_t count, StateOf&& state_of, const RoundContext& round, double* weights,
      FtrlProximal::Root* roots) const requires std::is_same_v<Inner, FtrlProximal> {
    inner_.WeightsWithRoots(
        count, [&](size_t i) { return &state_of(i)->inner; }, round, weights, roots);
  }
  void ApplyWithWeightAndRoot(State& s, double g, double w, const FtrlProximal::Root& root)
      const requires std::is_same_v<Inner, FtrlProximal> {
    inner_.ApplyWithWeightAndRoot(s.inner, g, w, root);
    SaturateState(s.inner);
  }

  // CompactFtrl's step (its codes saturate as they encode).
  void ApplyRounded(State& s, double g, double w, uint64_t key,
                    const RoundContext& round) const requires std::is_same_v<Inner, CompactFtrl> {
    inner_.ApplyRounded(s.inner, g, w, key, round);
  }

 private:
  Inner inner_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_STAMPED_H_
