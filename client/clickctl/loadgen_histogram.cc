#include "client/clickctl/loadgen_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace clickd {
namespace {

constexpr int kB = LatencyHistogram::kSubBucketBits;
constexpr uint64_t kLargest = (uint64_t{1} << LatencyHistogram::kMaxBits) - 1;

// Lowers (or raises) `target` to `value` if that is smaller (larger).
template <typename Better>
void Update(std::atomic<uint64_t>& target, uint64_t value, Better better) {
  uint64_t current = target.load(std::memory_order_relaxed);
  while (better(value, current) &&
         !target.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

int LatencyHistogram::BucketOf(uint64_t nanos) {
  const uint64_t v = std::min(nanos, kLargest);
  const int group = std::max(0, static_cast<int>(std::bit_width(v)) - 1 - kB);
  return (group << kB) + static_cast<int>(v >> group);
}

uint64_t LatencyHistogram::BucketLow(int bucket) {
  if (bucket < (2 << kB)) return static_cast<uint64_t>(bucket);
  const int group = (bucket >> kB) - 1;
  return static_cast<uint64_t>(bucket - (group << kB)) << group;
}

uint64_t LatencyHistogram::BucketWidth(int bucket) {
  if (bucket < (2 << kB)) return 1;
  return uint64_t{1} << ((bucket >> kB) - 1);
}

int LatencyHistogram::NumBuckets() { return BucketOf(kLargest) + 1; }

LatencyHistogram::LatencyHistogram() : buckets_(NumBuckets()) {}

void LatencyHistogram::Record(int64_t nanos) {
  const uint64_t v = nanos < 0 ? 0 : static_cast<uint64_t>(nanos);
  buckets_[BucketOf(v)].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  Update(min_, v, [](uint64_t a, uint64_t b) { return a < b; });
  Update(max_, v, [](uint64_t a, uint64_t b) { return a > b; });
}

double LatencyHistogram::QuantileNanos(double p) const {
  const uint64_t n = count();
  if (n == 0) return 0;
  const uint64_t rank =
      std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(p * static_cast<double>(n))), 1, n);
  const double max = static_cast<double>(max_.load(std::memory_order_relaxed));
  if (rank == n) return max;  // the largest value is known exactly
  const int last = static_cast<int>(buckets_.size()) - 1;
  uint64_t seen = 0;
  for (int b = 0; b < last; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    if (seen >= rank) {
      const double mid =
          static_cast<double>(BucketLow(b)) + static_cast<double>(BucketWidth(b) - 1) / 2.0;
      return std::clamp(mid, static_cast<double>(min_.load(std::memory_order_relaxed)), max);
    }
  }
  return max;  // in the overflow bucket: its values are not known, report the largest
}

LatencySummary LatencyHistogram::Summarize() const {
  LatencySummary s;
  s.count = count();
  if (s.count == 0) return s;
  s.min_us = static_cast<double>(min_.load(std::memory_order_relaxed)) / 1e3;
  s.max_us = static_cast<double>(max_.load(std::memory_order_relaxed)) / 1e3;
  s.mean_us = static_cast<double>(sum_.load(std::memory_order_relaxed)) /
              static_cast<double>(s.count) / 1e3;
  s.p50_us = QuantileNanos(0.5) / 1e3;
  s.p90_us = QuantileNanos(0.9) / 1e3;
  s.p99_us = QuantileNanos(0.99) / 1e3;
  s.p999_us = QuantileNanos(0.999) / 1e3;
  return s;
}

}  // namespace clickd
