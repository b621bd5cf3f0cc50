// The collected form of metrics, as the serializer sees them (prometheus-cpp's
// MetricFamily and ClientMetric): plain values copied out of the live
// counters, gauges and histograms at scrape time.
#ifndef CLICKD_SERVER_METRICS_METRIC_FAMILY_H_
#define CLICKD_SERVER_METRICS_METRIC_FAMILY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace clickd::metrics {

// A series' labels, name -> value, ordered by name.
using Labels = std::map<std::string, std::string>;

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge", "histogram": the word of the exposition format's TYPE line.
inline const char* MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

struct HistogramBucket {
  double upper_bound = 0;         // +Inf for the last bucket
  uint64_t cumulative_count = 0;  // observations <= upper_bound
};

// One series of a family.
struct ClientMetric {
  Labels labels;
  double value = 0;  // counter and gauge
  // Histogram only: cumulative buckets, the last one +Inf (its count equals
  // sample_count), and the sum of the observations.
  std::vector<HistogramBucket> buckets;
  uint64_t sample_count = 0;
  double sample_sum = 0;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<ClientMetric> metrics;
};

// Something that produces metric families at scrape time: a Registry, or
// anything else an exporter should serve.
class Collectable {
 public:
  virtual ~Collectable() = default;
  virtual std::vector<MetricFamily> Collect() const = 0;
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_METRIC_FAMILY_H_
