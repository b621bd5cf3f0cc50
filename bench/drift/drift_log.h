// A synthetic click stream whose true click probability is known at every
// example, stationary or drifting, for evaluating how learners follow a
// changing world (docs/drift.md). Excess logloss over the Bayes-optimal
// predictor is then exact: KL(p_t || q_t) per example, with no label noise.
//
// Each example has one categorical value in each of kFields fields, drawn
// from a Zipf vocabulary (a few very frequent values, a long tail: the
// shape of click logs), and a label drawn from
//   p_t = sigmoid(bias(t) + sum_f w_f(value_f, t)).
// Drift kinds:
//   kStationary  weights and bias fixed;
//   kAbrupt      every `period` examples, each value's weight is redrawn
//                with probability 1/2 and the bias moves between two levels;
//   kGradual     every weight oscillates, w(t) = m + a sin(2 pi t / P + phi),
//                each value with its own phase and a period P near `period`.
// All randomness comes from SplitMix64 (deterministic across platforms,
// up to libm's exp, pow and sin).
#ifndef CLICKD_BENCH_DRIFT_DRIFT_LOG_H_
#define CLICKD_BENCH_DRIFT_DRIFT_LOG_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace clickd::drift {

enum class DriftKind { kStationary, kAbrupt, kGradual };

// "stationary" | "abrupt" | "gradual"; false if unknown.
bool ParseDriftKind(std::string_view name, DriftKind* kind);
std::string_view DriftKindName(DriftKind kind);

inline constexpr int kFields = 6;

struct DriftLogOptions {
  DriftKind kind = DriftKind::kAbrupt;
  uint64_t seed = 1;
  uint64_t period = 250000;  // examples between changes (abrupt), or the mean period (gradual)
};

struct DriftExample {
  std::array<uint32_t, kFields> values;  // value index per field
  double p = 0;                          // true click probability
  int label = 0;                         // 0 or 1, drawn from p
};

class DriftLog {
 public:
  explicit DriftLog(const DriftLogOptions& options);

  // The example at position t (call with t = 0, 1, 2, ... in order).
  DriftExample Next();

  static uint32_t Vocabulary(int field);

 private:
  struct Field {
    std::vector<double> cdf;     // Zipf cumulative distribution
    std::vector<double> weight;  // current weight (stationary, abrupt) or mean m (gradual)
    std::vector<double> amplitude;
    std::vector<double> phase;
    std::vector<double> period;
  };
  double Uniform();
  double Gaussian();
  void Redraw(uint64_t epoch);

  DriftLogOptions options_;
  uint64_t state_;
  uint64_t t_ = 0;
  double bias_ = 0;
  std::array<Field, kFields> fields_;
};

}  // namespace clickd::drift

#endif  // CLICKD_BENCH_DRIFT_DRIFT_LOG_H_
