// Progressive validation: every example is scored before the model learns
// from it, and these metrics summarise those scores.
//
// ProgressiveMetrics keeps one small record per example (for the exact AUC
// and the bootstrap), so memory grows with the number of examples: 12 bytes
// each. Externally synchronized: one owner adds and reads.
#ifndef CLICKD_CORE_EVAL_METRICS_H_
#define CLICKD_CORE_EVAL_METRICS_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "core/optim/loss.h"

namespace clickd {

struct MetricsSummary {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  uint64_t examples = 0;
  double weight = 0;          // sum of importance weights
  double loss = kNaN;         // mean of the model's own loss (logistic, squared or hinge)
  double logloss = kNaN;      // logistic models only
  double auc = kNaN;          // exact, ties counted half; NaN if one class is absent
  double hinge = kNaN;        // mean max(0, 1 - y m), y in {-1,+1}
  double mistakes = kNaN;     // weighted fraction with sign(m) != y (m = 0 counts as a mistake)
  double calibration = kNaN;  // sum of p / sum of y01, logistic only; NaN if no positives
  double squared = kNaN;      // mean (prediction - label)^2
  // Largest possible error of `auc`: 0 when exact, > 0 for StreamingMetrics.
  double auc_error_bound = 0;
};

// One scored example.
struct ScoredExample {
  float margin;
  float label;
  float importance;
};

class ProgressiveMetrics {
 public:
  explicit ProgressiveMetrics(LossType loss);

  // Records the margin predicted for an example before learning from it.
  void Add(double margin, double label, double importance = 1.0);

  MetricsSummary Summary() const;
  LossType loss() const { return loss_; }
  const std::vector<ScoredExample>& scored() const { return scored_; }

 private:
  LossType loss_;
  std::vector<ScoredExample> scored_;
};

// Running weighted sums of every metric's per-example terms (metrics.cc).
struct MetricSums {
  uint64_t examples = 0;
  double w = 0, w_pos = 0, loss = 0, logloss = 0, hinge = 0, p = 0, squared = 0;
  double miss = 0, miss_half = 0;
  bool all_label01 = true;
};

// Progressive metrics in constant memory, for a served model's lifetime.
// Every sum is exact; the AUC comes from a histogram of margins in
// `auc_bins` (default kAucBins) equal bins over [-kAucRange, kAucRange]
// (margins beyond are clamped into the end bins). Pairs that share a bin
// count as ties, so the AUC is off by at most 0.5 * sum_b pos_b neg_b /
// (P N), which Summary() reports as auc_error_bound. The histogram is
// allocated at the first scored margin, so a model that has learned nothing
// (and each empty window bucket) costs a few dozen bytes, not 2 * auc_bins
// doubles. Externally synchronized.
class StreamingMetrics {
 public:
  static constexpr int kAucBins = 4096;
  static constexpr double kAucRange = 16.0;

  explicit StreamingMetrics(LossType loss, int auc_bins = kAucBins);

  void Add(double margin, double label, double importance = 1.0);
  MetricsSummary Summary() const;

  // Adds everything `other` has seen, as if its examples had been added
  // here. Returns false, changing nothing, unless `other` has the same loss
  // and number of bins.
  bool Merge(const StreamingMetrics& other);

  LossType loss() const { return loss_; }
  int auc_bins() const { return auc_bins_; }

 private:
  // Sizes both histograms to auc_bins_ (once).
  void AllocateBins();

  LossType loss_;
  int auc_bins_;
  MetricSums sums_;
  std::vector<double> positive_weight_;  // per bin; empty until the first margin
  std::vector<double> negative_weight_;  // per bin; empty until the first margin
  bool saw_nan_margin_ = false;
};

// Summarises an arbitrary set of scored examples (one function serves both
// the running metrics and the bootstrap resamples).
MetricsSummary Summarize(LossType loss, const std::vector<ScoredExample>& scored);

struct Interval {
  double lo = MetricsSummary::kNaN;
  double hi = MetricsSummary::kNaN;
};

// Percentile-bootstrap intervals: resamples the scored examples with
// replacement `resamples` times (deterministic for a given seed) and returns
// the central `level` interval of each metric.
struct BootstrapIntervals {
  Interval logloss;
  Interval auc;
  Interval loss;
  Interval mistakes;
  Interval calibration;
};
BootstrapIntervals Bootstrap(LossType loss, const std::vector<ScoredExample>& scored, int resamples,
                             uint64_t seed, double level = 0.95);

}  // namespace clickd

#endif  // CLICKD_CORE_EVAL_METRICS_H_
