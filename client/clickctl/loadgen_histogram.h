// LatencyHistogram: the latency record of `clickctl loadgen`, an HDR-like
// log-linear histogram of nanosecond durations with a stated precision.
//
// Durations below 256 ns have buckets 1 ns wide (exact). Above, each power
// of two [2^k, 2^(k+1)) is split into 128 equal buckets, so a bucket is at
// most 1/128 of its values wide; a percentile is reported as its bucket's
// midpoint (clamped to the exact minimum and maximum), within 0.4 % of the
// true order statistic; the maximum is exact. Durations from 2^40 ns (about
// 18 minutes) up share an overflow bucket, whose quantiles report the
// maximum. Memory is fixed (about 35 KB).
//
// Percentiles use the nearest-rank definition: the p-quantile of n values is
// the ceil(p * n)-th smallest (at least the first), so p50 <= p90 <= p99 <=
// p99.9 <= max always holds.
//
// Thread safety: Record() may be called from any number of threads at once
// (relaxed atomics). Summarize() must not run concurrently with Record():
// call it after every recording thread has been joined or has otherwise
// synchronized with the caller (e.g. through a mutex).
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_HISTOGRAM_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_HISTOGRAM_H_

#include <atomic>
#include <cstdint>
#include <vector>

namespace clickd {

struct LatencySummary {
  uint64_t count = 0;
  double min_us = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  double max_us = 0;
};

class LatencyHistogram {
 public:
  // Buckets per power of two: 2^kSubBucketBits.
  static constexpr int kSubBucketBits = 7;
  // Durations at or above 2^kMaxBits ns share the last bucket.
  static constexpr int kMaxBits = 40;

  LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Records one duration; negative durations count as 0.
  void Record(int64_t nanos);

  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

  // The p-quantile (0 < p <= 1) in nanoseconds, as described above; 0 when
  // nothing was recorded.
  double QuantileNanos(double p) const;

  // Count, min, mean, p50, p90, p99, p99.9 and max, in microseconds.
  LatencySummary Summarize() const;

  // The bucket of a duration and the range [low, low + width) it covers;
  // public for the tests.
  static int BucketOf(uint64_t nanos);
  static uint64_t BucketLow(int bucket);
  static uint64_t BucketWidth(int bucket);
  static int NumBuckets();

 private:
  std::vector<std::atomic<uint64_t>> buckets_;
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> min_{UINT64_MAX};
  std::atomic<uint64_t> max_{0};
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_HISTOGRAM_H_
