// Family<T>: the series of one metric (a Counter, Gauge or Histogram per
// distinct set of labels), as in prometheus-cpp. Built by a Registry.
//
//   Family<Counter>& requests = registry.BuildCounter("x_requests_total", "Requests.");
//   Counter& ok = requests.Add({{"code", "OK"}});  // once, at startup
//   ok.Increment();                                // per request: lock-free
//
// Add() takes the family's lock, so call it once per series and keep the
// reference: it stays valid until RemoveIf removes the series (Share() gives
// a handle that stays valid after that, for an observer that may outlive
// its series). For series that come and go with the registry, prefer a
// callback family (Registry::BuildCallback).
//
// Thread safety: safe for concurrent access.
#ifndef CLICKD_SERVER_METRICS_FAMILY_H_
#define CLICKD_SERVER_METRICS_FAMILY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "server/metrics/metric_family.h"
#include "server/metrics/naming.h"

namespace clickd::metrics {

// What a Registry keeps of every family: its name and how to collect it.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type)
      : name_(std::move(name)), help_(std::move(help)), type_(type) {}
  virtual ~FamilyBase() = default;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }

  // The family with every series as it is now.
  virtual MetricFamily Collect() const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
};

template <typename T>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help)
      : FamilyBase(std::move(name), std::move(help), T::kType) {}

  // Returns the series with exactly these labels, creating it from `args`
  // (a Histogram's bounds) if there is none; an existing series ignores
  // `args`. Label names must be valid (naming.h), and a histogram's may not
  // be "le".
  template <typename... Args>
  T& Add(const Labels& labels, Args&&... args) {
    return *Share(labels, std::forward<Args>(args)...);
  }

  // Add(), returning shared ownership: observations through the handle after
  // the series was removed go nowhere, safely.
  template <typename... Args>
  std::shared_ptr<T> Share(const Labels& labels, Args&&... args) {
    MutexLock lock(&mu_);
    auto it = metrics_.find(labels);
    if (it != metrics_.end()) return it->second;
    for (const auto& [label, value] : labels) {
      if (!IsValidLabelName(label) || (T::kType == MetricType::kHistogram && label == "le")) {
        FailOnMisuse("invalid label name \"" + label + "\" for " + name());
      }
    }
    auto metric = std::make_shared<T>(std::forward<Args>(args)...);
    metrics_.emplace(labels, metric);
    return metric;
  }

  // Removes every series whose labels satisfy `doomed` (for example those of
  // a deleted model), so that it no longer appears in scrapes.
  template <typename Predicate>
  void RemoveIf(Predicate&& doomed) {
    MutexLock lock(&mu_);
    std::erase_if(metrics_, [&doomed](const auto& entry) { return doomed(entry.first); });
  }

  MetricFamily Collect() const override {
    MetricFamily family{name(), help(), type(), {}};
    ReaderMutexLock lock(&mu_);
    family.metrics.reserve(metrics_.size());
    for (const auto& [labels, metric] : metrics_) family.metrics.push_back(metric->Collect(labels));
    return family;
  }

 private:
  mutable Mutex mu_;
  // std::map: the series in label order, and nodes that never move.
  std::map<Labels, std::shared_ptr<T>> metrics_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_FAMILY_H_
