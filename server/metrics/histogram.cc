#include "server/metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clickd::metrics {
namespace {

Histogram::BucketBoundaries Normalize(Histogram::BucketBoundaries bounds) {
  std::erase_if(bounds, [](double b) { return !std::isfinite(b); });
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

}  // namespace

Histogram::Histogram(BucketBoundaries bounds) : bounds_(Normalize(std::move(bounds))) {
  for (Shard& shard : shards_) {
    // Value-initialized: every count starts at 0.
    shard.counts = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  }
}

size_t Histogram::BucketIndex(double value) const {
  if (std::isnan(value)) return bounds_.size();
  return std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
}

ClientMetric Histogram::Collect(const Labels& labels) const {
  ClientMetric m;
  m.labels = labels;
  m.buckets.resize(bounds_.size() + 1);
  for (const Shard& shard : shards_) {
    for (size_t b = 0; b <= bounds_.size(); ++b) {
      m.buckets[b].cumulative_count += shard.counts[b].load(std::memory_order_relaxed);
    }
    m.sample_sum += shard.sum.load(std::memory_order_relaxed);
  }
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= bounds_.size(); ++b) {
    cumulative += m.buckets[b].cumulative_count;
    m.buckets[b].cumulative_count = cumulative;
    m.buckets[b].upper_bound =
        b < bounds_.size() ? bounds_[b] : std::numeric_limits<double>::infinity();
  }
  m.sample_count = cumulative;
  return m;
}

}  // namespace clickd::metrics
