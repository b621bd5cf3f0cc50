#include "core/eval/windowed_metrics.h"

#include <algorithm>

namespace clickd {

WindowedMetrics::WindowedMetrics(LossType loss, int buckets, Duration bucket_width, int auc_bins)
    : loss_(loss),
      auc_bins_(auc_bins),
      bucket_width_(std::max(bucket_width, Duration(1))),
      buckets_(std::max(buckets, 1), Bucket{kNoPeriod, StreamingMetrics(loss, auc_bins)}) {}

int64_t WindowedMetrics::PeriodOf(TimePoint t) const {
  const int64_t ticks = t.time_since_epoch().count();
  const int64_t width = bucket_width_.count();
  // Floor division, so that times before the epoch (a fake clock's) number
  // their periods consistently too.
  return ticks >= 0 ? ticks / width : -((-ticks + width - 1) / width);
}

void WindowedMetrics::Add(TimePoint now, double margin, double label, double importance) {
  const int64_t period = PeriodOf(now);
  const int64_t n = static_cast<int64_t>(buckets_.size());
  Bucket& bucket = buckets_[((period % n) + n) % n];
  if (bucket.period != period) {
    // The slot holds an expired period (or, if the clock went back, a later
    // one): start it afresh for this one.
    bucket.period = period;
    bucket.metrics = StreamingMetrics(loss_, auc_bins_);
  }
  bucket.metrics.Add(margin, label, importance);
}

MetricsSummary WindowedMetrics::Summary(TimePoint now) const {
  const int64_t current = PeriodOf(now);
  const int64_t oldest = current - static_cast<int64_t>(buckets_.size()) + 1;
  StreamingMetrics window(loss_, auc_bins_);
  for (const Bucket& bucket : buckets_) {
    if (bucket.period != kNoPeriod && bucket.period >= oldest && bucket.period <= current) {
      window.Merge(bucket.metrics);
    }
  }
  return window.Summary();
}

}  // namespace clickd
