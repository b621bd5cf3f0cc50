// Gauge: a value that goes up and down, or is set (a build's info, a start
// time, things in flight).
//
// Thread safety: safe for concurrent access; every operation is one atomic
// (a relaxed store or compare-and-swap loop), never a lock.
#ifndef CLICKD_SERVER_METRICS_GAUGE_H_
#define CLICKD_SERVER_METRICS_GAUGE_H_

#include <atomic>

#include "server/metrics/metric_family.h"
#include "server/metrics/shard.h"

namespace clickd::metrics {

class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Increment(double v = 1.0) { AtomicAdd(value_, v); }
  void Decrement(double v = 1.0) { AtomicAdd(value_, -v); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

  ClientMetric Collect(const Labels& labels) const {
    ClientMetric m;
    m.labels = labels;
    m.value = Value();
    return m;
  }

 private:
  std::atomic<double> value_{0};
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_GAUGE_H_
