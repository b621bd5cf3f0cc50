#include "server/metrics/registry.h"

#include <prometheus/check_names.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
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

bool ValidLabels(const Labels& labels) {
  return std::all_of(labels.begin(), labels.end(),
                     [](const auto& l) { return prometheus::CheckLabelName(l.first); });
}

ClientMetric Labelled(const Labels& labels) {
  ClientMetric m;
  for (const auto& [label, value] : labels) m.label.push_back({label, value});
  return m;
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
  AddCallbackFamily({name,
                     help,
                     type == MetricType::kCounter ? prometheus::MetricType::Counter
                                                  : prometheus::MetricType::Gauge,
                     std::move(callback),
                     nullptr,
                     {}});
}

void Registry::BuildCallbackHistogram(const std::string& name, const std::string& help,
                                      std::vector<double> upper_bounds,
                                      HistogramCallback callback) {
  const bool ascending = std::adjacent_find(upper_bounds.begin(), upper_bounds.end(),
                                            std::greater_equal<double>()) == upper_bounds.end();
  const bool finite = std::all_of(upper_bounds.begin(), upper_bounds.end(),
                                  [](double b) { return std::isfinite(b); });
  if (!ascending || !finite) {
    FailOnMisuse("histogram \"" + name + "\" needs finite ascending bucket bounds");
  }
  AddCallbackFamily({name, help, prometheus::MetricType::Histogram, nullptr, std::move(callback),
                     std::move(upper_bounds)});
}

void Registry::AddCallbackFamily(CallbackFamily family) {
  MutexLock lock(&mu_);
  CheckName(family.name, Kind::kCallback, family.help);
  names_.emplace(family.name, Built{Kind::kCallback, family.help});
  callbacks_.push_back(std::make_shared<const CallbackFamily>(std::move(family)));
}

std::vector<ClientMetric> Registry::CollectSamples(const CallbackFamily& family) {
  std::vector<Sample> samples = family.callback();
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.labels < b.labels; });
  std::vector<ClientMetric> out;
  for (const Sample& sample : samples) {
    if (!ValidLabels(sample.labels)) continue;
    ClientMetric m = Labelled(sample.labels);
    if (family.type == prometheus::MetricType::Counter) {
      m.counter.value = sample.value;
    } else {
      m.gauge.value = sample.value;
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<ClientMetric> Registry::CollectHistograms(const CallbackFamily& family) {
  std::vector<HistogramSample> samples = family.histogram_callback();
  std::sort(samples.begin(), samples.end(),
            [](const HistogramSample& a, const HistogramSample& b) { return a.labels < b.labels; });
  const size_t buckets = family.upper_bounds.size() + 1;
  std::vector<ClientMetric> out;
  for (const HistogramSample& sample : samples) {
    if (!ValidLabels(sample.labels) || sample.bucket_counts.size() != buckets) continue;
    ClientMetric m = Labelled(sample.labels);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < buckets; ++i) {
      cumulative += sample.bucket_counts[i];
      const double bound = i < family.upper_bounds.size() ? family.upper_bounds[i]
                                                          : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back({cumulative, bound});
    }
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = sample.sum;
    out.push_back(std::move(m));
  }
  return out;
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
    family.type = callback->type;
    family.metric = callback->type == prometheus::MetricType::Histogram
                        ? CollectHistograms(*callback)
                        : CollectSamples(*callback);
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
