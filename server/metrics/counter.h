// Counter: a value that only goes up (requests served, examples learned).
//
// Thread safety: safe for concurrent access. Increment is lock-free: a
// relaxed atomic add on the calling thread's shard (shard.h); Value() sums
// the shards, so it may miss increments that race with it, never counts one
// twice and never goes down.
#ifndef CLICKD_SERVER_METRICS_COUNTER_H_
#define CLICKD_SERVER_METRICS_COUNTER_H_

#include <array>
#include <atomic>

#include "server/metrics/metric_family.h"
#include "server/metrics/shard.h"

namespace clickd::metrics {

class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `v`; a negative or NaN `v` is ignored (a counter never goes down).
  void Increment(double v = 1.0) {
    if (!(v >= 0)) return;
    AtomicAdd(cells_[ThisThreadShard()].value, v);
  }

  double Value() const;

  // The value as a series of labels `labels`.
  ClientMetric Collect(const Labels& labels) const;

 private:
  struct alignas(kCacheLine) Cell {
    std::atomic<double> value{0};
  };
  std::array<Cell, kShards> cells_;
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_COUNTER_H_
