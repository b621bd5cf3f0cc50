// WindowedMetrics: progressive metrics of the recent past (say, the last 10
// minutes) in constant memory, for live monitoring of a served model.
//
// Time is cut into periods of `bucket_width` (one minute by default),
// numbered from the clock's epoch; a ring of `buckets` StreamingMetrics
// holds the last `buckets` periods, and a bucket is cleared when its slot is
// reused by a newer period. Summary(now) merges the buckets of the current
// period and the `buckets - 1` before it, so with the defaults the window
// holds the examples of the last 9 to 10 minutes: the 9 full minutes before
// the current one and the part of the current one that has passed. A period
// with no examples contributes nothing, and a window with no examples has
// examples == 0 and NaN metrics.
//
// The sums (logloss, calibration, ...) are exact. The AUC is binned as in
// StreamingMetrics, with fewer bins (kAucBins = 1024 over margins [-16, 16],
// bins 1/32 wide) to keep each bucket at 16 KiB: only pairs of examples
// whose margins are within 1/32 of each other (predicted probabilities
// within 0.8 percentage points) can be misordered, and the error is at most
// the summary's auc_error_bound.
//
// Time is an argument, so that the window is testable without sleeping; the
// owner reads it from an injectable MonotonicClock. Externally synchronized.
#ifndef CLICKD_CORE_EVAL_WINDOWED_METRICS_H_
#define CLICKD_CORE_EVAL_WINDOWED_METRICS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/eval/metrics.h"
#include "core/optim/loss.h"

namespace clickd {

// Where the owner of a WindowedMetrics reads the time: steady_clock::now in
// production, a fake in tests.
using MonotonicClock = std::function<std::chrono::steady_clock::time_point()>;

class WindowedMetrics {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  static constexpr int kDefaultBuckets = 10;
  static constexpr std::chrono::seconds kDefaultBucketWidth{60};
  static constexpr int kAucBins = 1024;

  // `buckets` >= 1 and `bucket_width` > 0 (smaller values are raised to
  // 1 bucket, 1 ns).
  explicit WindowedMetrics(LossType loss, int buckets = kDefaultBuckets,
                           Duration bucket_width = kDefaultBucketWidth, int auc_bins = kAucBins);

  // Records an example scored at time `now`.
  void Add(TimePoint now, double margin, double label, double importance = 1.0);

  // The metrics of the examples added in the window that ends at `now`.
  MetricsSummary Summary(TimePoint now) const;

  // The window's nominal length: buckets * bucket_width.
  Duration window() const { return bucket_width_ * static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    int64_t period;  // the period this bucket holds; kNoPeriod if none yet
    StreamingMetrics metrics;
  };
  static constexpr int64_t kNoPeriod = INT64_MIN;

  // The number of the period that contains `t` (floor of t / bucket_width).
  int64_t PeriodOf(TimePoint t) const;

  LossType loss_;
  int auc_bins_;
  Duration bucket_width_;
  std::vector<Bucket> buckets_;  // period p lives in buckets_[p mod size]
};

}  // namespace clickd

#endif  // CLICKD_CORE_EVAL_WINDOWED_METRICS_H_
