// Registry: the metric families clickd exports. Counters, gauges and
// histograms are prometheus-cpp's (prometheus::Registry, Family, Counter,
// Gauge, Histogram); what is clickd's own is the callback family, whose
// series a function computes at scrape time from state kept elsewhere (a
// model's size, or a histogram's bucket counts, say), so that series appear
// and disappear with what they describe. main() builds one Registry, the code that counts builds
// families in it, and the HTTP exporter collects it at every scrape.
//
//   Family<Counter>& requests = registry.BuildCounter("x_requests_total", "Requests.");
//   Counter& ok = requests.Add({{"code", "OK"}});  // once, at startup
//   ok.Increment();                                // per request
//
// Family::Add takes the family's lock, so call it once per series and keep
// the reference: it stays valid until Family::Remove removes the series.
//
// Thread safety: safe for concurrent access. Building takes a lock; Collect
// collects the library's registry, then runs the callbacks without a lock.
#ifndef CLICKD_SERVER_METRICS_REGISTRY_H_
#define CLICKD_SERVER_METRICS_REGISTRY_H_

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"

namespace clickd::metrics {

using Counter = prometheus::Counter;
using Gauge = prometheus::Gauge;
using Histogram = prometheus::Histogram;
template <typename T>
using Family = prometheus::Family<T>;
using Collectable = prometheus::Collectable;
using MetricFamily = prometheus::MetricFamily;
using ClientMetric = prometheus::ClientMetric;

// A series' labels, name -> value, ordered by name.
using Labels = std::map<std::string, std::string>;

// What a callback family exports.
enum class MetricType { kCounter, kGauge };

// One series computed by a callback.
struct Sample {
  Labels labels;
  double value = 0;
};
using SampleCallback = std::function<std::vector<Sample>()>;

// One histogram series computed by a callback: how many observations fell
// in each bucket (per bucket, not cumulative: one count per upper bound of
// its family, then one for +Inf) and their sum.
struct HistogramSample {
  Labels labels;
  std::vector<uint64_t> bucket_counts;
  double sum = 0;
};
using HistogramCallback = std::function<std::vector<HistogramSample>()>;

class Registry final : public Collectable {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Return the family of that name, building it if there is none. The name
  // must be valid and, if taken, taken by a family of the same kind and help
  // text; anything else is a bug of the program and aborts at startup. The
  // reference stays valid for the registry's lifetime.
  Family<Counter>& BuildCounter(const std::string& name, const std::string& help);
  Family<Gauge>& BuildGauge(const std::string& name, const std::string& help);
  Family<Histogram>& BuildHistogram(const std::string& name, const std::string& help);

  // Adds a family of `type` whose series `callback` returns at every scrape.
  // The callback runs on the scraping thread, may be called concurrently,
  // and must not build families in this registry. Series with an invalid
  // label name are left out. The name must be valid and new.
  void BuildCallback(const std::string& name, const std::string& help, MetricType type,
                     SampleCallback callback);

  // Adds a histogram family whose series `callback` returns at every scrape,
  // exported as prometheus-cpp exports its own histograms: cumulative
  // buckets `le` = each of `upper_bounds` (finite, ascending) then +Inf,
  // `_count` the +Inf bucket, `_sum`. The callback's rules are
  // BuildCallback's; a series with an invalid label name, or without
  // upper_bounds.size() + 1 counts, is left out.
  void BuildCallbackHistogram(const std::string& name, const std::string& help,
                              std::vector<double> upper_bounds, HistogramCallback callback);

  // The library's families in the order built, then the callback families
  // in the order built; each callback family's series ordered by labels.
  std::vector<MetricFamily> Collect() const override;

 private:
  // Either a counter or gauge family (callback) or a histogram family
  // (histogram_callback, upper_bounds).
  struct CallbackFamily {
    std::string name;
    std::string help;
    prometheus::MetricType type;
    SampleCallback callback;
    HistogramCallback histogram_callback;
    std::vector<double> upper_bounds;
  };

  // The series of one callback family, ordered by labels.
  static std::vector<ClientMetric> CollectSamples(const CallbackFamily& family);
  static std::vector<ClientMetric> CollectHistograms(const CallbackFamily& family);
  // Adds `family` under a name checked here (aborts on misuse).
  void AddCallbackFamily(CallbackFamily family);

  // Kinds of the library's families, to refuse a second family of one name
  // before the library would throw.
  enum class Kind { kCounter, kGauge, kHistogram, kCallback };
  struct Built {
    Kind kind;
    std::string help;
  };

  // Returns true if `name` was built before as `kind` with `help` (build it
  // again: the library returns the same family); false if it is new; aborts
  // if it is invalid or taken otherwise. The caller holds mu_.
  bool CheckName(const std::string& name, Kind kind, const std::string& help) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  template <typename T>
  Family<T>& Build(prometheus::detail::Builder<T> builder, Kind kind, const std::string& name,
                   const std::string& help);

  mutable Mutex mu_;
  // prometheus::Registry is thread-safe on its own; mu_ orders building
  // against the name checks.
  const std::shared_ptr<prometheus::Registry> library_ = std::make_shared<prometheus::Registry>();
  std::map<std::string, Built> names_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const CallbackFamily>> callbacks_ ABSL_GUARDED_BY(mu_);
};

// A series' labels as a map (for tests and checks).
Labels LabelsOf(const ClientMetric& metric);

// A counter's or gauge's value (0 for other types).
double ValueOf(const MetricFamily& family, const ClientMetric& metric);

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_REGISTRY_H_
