// Registry: the metric families a process exports, in the order they were
// built (prometheus-cpp's Registry). main() builds one, the code that counts
// builds families in it, and the HTTP exporter collects it at every scrape.
//
// Two kinds of families:
//  - live ones (BuildCounter / BuildGauge / BuildHistogram), whose series
//    the program updates as things happen; and
//  - callback ones (BuildCallback), whose series a function computes at
//    scrape time from state kept elsewhere (a model's size, say), so that
//    series appear and disappear with what they describe.
//
// Thread safety: safe for concurrent access. Building takes the registry's
// lock; Collect takes it only to list the families, then collects them (and
// runs callbacks) without it.
#ifndef CLICKD_SERVER_METRICS_REGISTRY_H_
#define CLICKD_SERVER_METRICS_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "server/metrics/counter.h"
#include "server/metrics/family.h"
#include "server/metrics/gauge.h"
#include "server/metrics/histogram.h"
#include "server/metrics/metric_family.h"

namespace clickd::metrics {

// One series computed by a callback.
struct Sample {
  Labels labels;
  double value = 0;
};
using SampleCallback = std::function<std::vector<Sample>()>;

class Registry final : public Collectable {
 public:
  // Return the family of that name, building it if there is none. The name
  // must be valid (naming.h) and, if taken, taken by a family of the same
  // kind and help text; anything else is a bug and aborts (FailOnMisuse).
  // The reference stays valid for the registry's lifetime.
  Family<Counter>& BuildCounter(const std::string& name, const std::string& help);
  Family<Gauge>& BuildGauge(const std::string& name, const std::string& help);
  Family<Histogram>& BuildHistogram(const std::string& name, const std::string& help);

  // Adds a family of `type` (counter or gauge) whose series `callback`
  // returns at every scrape. The callback runs on the scraping thread, may
  // be called concurrently, and must not build families in this registry.
  // Series with an invalid label name are left out. The name must be new.
  void BuildCallback(const std::string& name, const std::string& help, MetricType type,
                     SampleCallback callback);

  // Every family, in the order built; each one's series ordered by labels.
  std::vector<MetricFamily> Collect() const override;

 private:
  template <typename T>
  Family<T>& Build(const std::string& name, const std::string& help);

  // Aborts unless `name` is valid and free. The caller holds mu_.
  void CheckNewName(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_REGISTRY_H_
