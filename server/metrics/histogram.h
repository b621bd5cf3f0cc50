// Histogram: counts observations (say, request durations) in buckets with
// fixed upper bounds, plus their sum, for the exposition format's
// cumulative `_bucket{le=...}`, `_sum` and `_count` series.
//
// An observation v falls in the first bucket whose bound b has v <= b, or
// in the implicit +Inf bucket past the last bound (NaN too, which also
// makes the sum NaN, as in Prometheus' own clients).
//
// Thread safety: safe for concurrent access. Observe is lock-free: a binary
// search, then relaxed atomic adds to the calling thread's shard of one
// bucket count and of the sum. Collect sums the shards: the count is the
// sum of the bucket counts, so `+Inf` always equals `_count`; the sum may
// lag an observation that races with the scrape.
#ifndef CLICKD_SERVER_METRICS_HISTOGRAM_H_
#define CLICKD_SERVER_METRICS_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "server/metrics/metric_family.h"
#include "server/metrics/shard.h"

namespace clickd::metrics {

class Histogram {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;
  using BucketBoundaries = std::vector<double>;

  // `bounds`: the upper bounds of the finite buckets. They are sorted and
  // deduplicated; NaN and infinities are dropped (+Inf is always implicit).
  explicit Histogram(BucketBoundaries bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value) {
    Shard& shard = shards_[ThisThreadShard()];
    shard.counts[BucketIndex(value)].fetch_add(1, std::memory_order_relaxed);
    AtomicAdd(shard.sum, value);
  }

  // The bucket `value` falls in: the index of the first bound >= value, or
  // bounds().size() for the +Inf bucket.
  size_t BucketIndex(double value) const;

  const BucketBoundaries& bounds() const { return bounds_; }

  ClientMetric Collect(const Labels& labels) const;

 private:
  struct alignas(kCacheLine) Shard {
    std::unique_ptr<std::atomic<uint64_t>[]> counts;  // bounds_.size() + 1, not cumulative
    std::atomic<double> sum{0};
  };

  const BucketBoundaries bounds_;
  std::array<Shard, kShards> shards_;
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_HISTOGRAM_H_
