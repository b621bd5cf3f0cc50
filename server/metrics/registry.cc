#include "server/metrics/registry.h"

#include <prometheus/check_names.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace clickd::metrics {
namespace {

// Metric and label names are constants of the program, so a bad one (or two
// families with one name) is a bug, not an error to handle: report it and
// abort at startup, where the family is built.
[[noreturn]] void FailOnMisuse(const std::string& what) {
  std::fprintf(stderr, "clickd metrics misuse: %s\n", what.c_str());
  std::abort();
}

}  // namespace

bool Registry::CheckName(const std::string& name, Kind kind, const std::string& help) const {
  if (!prometheus::CheckMetricName(name)) FailOnMisuse("invalid metric name \"" + name + "\"");
  auto it = names_.find(name);
  if (it == names_.end()) return false;
  if (kind == Kind::kCallback || it->second.kind != kind || it->second.help != help) {
    FailOnMisuse("metric \"" + name + "\" is already registered");
  }
  return true;
}

template <typename T>
Family<T>& Registry::Build(prometheus::detail::Builder<T> builder, Kind kind,
                           const std::string& name, const std::string& help) {
  MutexLock lock(&mu_);
  if (!CheckName(name, kind, help)) names_.emplace(name, Built{kind, help});
  // Same name, kind and help: the library's Merge returns the same family.
  return builder.Name(name).Help(help).Register(*library_);
}

Family<Counter>& Registry::BuildCounter(const std::string& name, const std::string& help) {
  return Build(prometheus::BuildCounter(), Kind::kCounter, name, help);
}

Family<Gauge>& Registry::BuildGauge(const std::string& name, const std::string& help) {
  return Build(prometheus::BuildGauge(), Kind::kGauge, name, help);
}

Family<Histogram>& Registry::BuildHistogram(const std::string& name, const std::string& help) {
  return Build(prometheus::BuildHistogram(), Kind::kHistogram, name, help);
}

void Registry::BuildCallback(const std::string& name, const std::string& help, MetricType type,
                             SampleCallback callback) {
  MutexLock lock(&mu_);
  CheckName(name, Kind::kCallback, help);
  names_.emplace(name, Built{Kind::kCallback, help});
  callbacks_.push_back(std::make_shared<const CallbackFamily>(
      CallbackFamily{name, help, type, std::move(callback)}));
}

std::vector<MetricFamily> Registry::Collect() const {
  std::vector<std::shared_ptr<const CallbackFamily>> callbacks;
  {
    ReaderMutexLock lock(&mu_);
    callbacks = callbacks_;
  }
  std::vector<MetricFamily> out = library_->Collect();
  for (const auto& callback : callbacks) {
    MetricFamily family;
    family.name = callback->name;
    family.help = callback->help;
    family.type = callback->type == MetricType::kCounter ? prometheus::MetricType::Counter
                                                         : prometheus::MetricType::Gauge;
    std::vector<Sample> samples = callback->callback();
    std::sort(samples.begin(), samples.end(),
              [](const Sample& a, const Sample& b) { return a.labels < b.labels; });
    for (Sample& sample : samples) {
      const bool valid = std::all_of(sample.labels.begin(), sample.labels.end(), [](const auto& l) {
        return prometheus::CheckLabelName(l.first);
      });
      if (!valid) continue;
      ClientMetric m;
      for (auto& [label, value] : sample.labels) m.label.push_back({label, value});
      if (callback->type == MetricType::kCounter) {
        m.counter.value = sample.value;
      } else {
        m.gauge.value = sample.value;
      }
      family.metric.push_back(std::move(m));
    }
    out.push_back(std::move(family));
  }
  return out;
}

Labels LabelsOf(const ClientMetric& metric) {
  Labels labels;
  for (const ClientMetric::Label& l : metric.label) labels[l.name] = l.value;
  return labels;
}

double ValueOf(const MetricFamily& family, const ClientMetric& metric) {
  switch (family.type) {
    case prometheus::MetricType::Counter:
      return metric.counter.value;
    case prometheus::MetricType::Gauge:
      return metric.gauge.value;
    default:
      return 0;
  }
}

}  // namespace clickd::metrics
