// The numeric bounds that keep every weight, accumulator and margin of a
// model finite: the one place the limits on inputs (checked before anything
// is learned or logged), on hyperparameters (checked by the config
// validators) and the learning step's last-line clamps are defined.
// docs/api.md and docs/optimizers.md ("Numeric bounds") describe them.
//
// Two layers:
// - Inputs and hyperparameters are refused outside documented ranges with
//   InvalidArgument naming the field and the limit (the Check* functions
//   below, ValidateTrainingBatch, ValidateOptimizerConfig,
//   ValidateDenseOptimizerConfig).
// - Bounds alone cannot prove finiteness of sums that grow forever (FTRL's n,
//   AdaGrad's sum of g^2, the round's sum of ||g||^2), nor of data read
//   offline without the server's checks. So the learning step clamps each
//   coordinate's gradient to +-kMaxCoordinateGradient and saturates every
//   float of a coordinate's state at +-kMaxStateValue. Both are far beyond
//   what bounded inputs produce in practice, so they change no result of
//   ordinary data: existing digests stay bit-identical. The hasher, for its
//   part, saturates crosses and merged duplicates at +-FLT_MAX, so every
//   hashed value is finite (core/features/hasher.h).
//
// All functions are pure and thread-compatible.
#ifndef CLICKD_CORE_OPTIM_NUMERIC_BOUNDS_H_
#define CLICKD_CORE_OPTIM_NUMERIC_BOUNDS_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "absl/status/status.h"
#include "core/optim/loss.h"

namespace clickd {

// Importance weight of one example: in [0, kMaxImportance]. An importance
// is a sampling correction (1 / the rate an example class was kept at);
// 1e4 covers keeping one negative in ten thousand, beyond any sane
// downsampling, and keeps a logistic gradient |g_i| <= 1e4 |x_i|.
inline constexpr double kMaxImportance = 1e4;
// |label| under squared loss (logistic and hinge take only 0/1/-1).
inline constexpr double kMaxSquaredLabel = 1e6;
// |value| of a sparse feature, as sent to the server. Crosses multiply up
// to three values (|x| <= 1e18), which a float holds.
inline constexpr double kMaxFeatureValue = 1e6;
// |value| of a dense value.
inline constexpr double kMaxDenseValue = 1e6;

// The learning step's clamps (see the opening comment). A gradient of 1e15
// squares to 1e30, which a float accumulator holds with room to spare;
// ordinary data stays below 1e12 (importance 1e4 x value 1e6 x a
// squared-loss residual 1e2).
inline constexpr double kMaxCoordinateGradient = 1e15;
// Every float of a per-coordinate state is kept within +-kMaxStateValue
// (FLT_MAX is 3.4e38: one step's increment never overflows before the
// clamp). The round's sum of squared gradient norms (a double) saturates at
// kMaxRoundSum.
inline constexpr float kMaxStateValue = 1e30f;
inline constexpr double kMaxRoundSum = 1e300;

// Ranges of the optimizers' hyperparameters (docs/optimizers.md): learning
// rates (alpha, eta, scale) in [kMinRate, kMaxRate]; the values that divide
// a step (ftrl.beta, adagrad.delta, cw.a, radii, diameters, bounds) in
// [kMinScale, kMaxScale]; regularisation weights (lambdas, pa.c) in
// [0, kMaxScale].
inline constexpr double kMinRate = 1e-9;
inline constexpr double kMaxRate = 1e3;
inline constexpr double kMinScale = 1e-6;
inline constexpr double kMaxScale = 1e6;

// Returns g clamped to +-kMaxCoordinateGradient (g itself when finite and
// within it, so ordinary gradients are unchanged bit for bit).
inline double ClampGradient(double g) {
  return std::clamp(g, -kMaxCoordinateGradient, kMaxCoordinateGradient);
}

// A finite double as a finite float: beyond +-FLT_MAX it saturates (a
// margin stored as float for progressive validation).
inline float ToFiniteFloat(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  return static_cast<float>(std::clamp(v, -kMax, kMax));
}

// Saturates every float of a per-coordinate State at +-kMaxStateValue. Every
// optimizer's State is a struct of floats only (numeric_bounds_test checks
// each); an infinity produced by one step becomes the bound.
template <typename State>
void SaturateState(State& state) {
  // An encoded state (16-bit codes: core/optim/compact_float.h) saturates
  // as it is encoded.
  if constexpr (requires { State::kSelfSaturating; }) return;
  static_assert(sizeof(State) % sizeof(float) == 0, "a State is floats only");
  float values[sizeof(State) / sizeof(float)];
  std::memcpy(values, &state, sizeof(values));
  for (float& v : values) v = std::clamp(v, -kMaxStateValue, kMaxStateValue);
  std::memcpy(&state, values, sizeof(values));
}

// True if every float of the bytes (a State, or a run of them) is finite.
bool FloatsAreFinite(std::string_view bytes);

// Checks one input against its bound; errors are InvalidArgument and name
// `field` (e.g. "examples[3].importance") and the limit.
absl::Status CheckImportance(double importance, std::string_view field);
absl::Status CheckFeatureValue(double value, std::string_view field);
absl::Status CheckDenseValue(double value, std::string_view field);
// The loss's domain (CheckLabel) and, under squared loss, |label| <=
// kMaxSquaredLabel.
absl::Status CheckBoundedLabel(LossType loss, double label, std::string_view field);

// Checks a hyperparameter is finite and in [lo, hi]: "<field> is <value>;
// must be in [lo, hi]".
absl::Status CheckParamInRange(std::string_view field, double value, double lo, double hi);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_NUMERIC_BOUNDS_H_
