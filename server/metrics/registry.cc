#include "server/metrics/registry.h"

#include <algorithm>
#include <utility>

namespace clickd::metrics {
namespace {

// A family whose series a callback computes at scrape time.
class CallbackFamily final : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type, SampleCallback callback)
      : FamilyBase(std::move(name), std::move(help), type), callback_(std::move(callback)) {}

  MetricFamily Collect() const override {
    MetricFamily family{name(), help(), type(), {}};
    for (Sample& sample : callback_()) {
      const bool valid =
          std::all_of(sample.labels.begin(), sample.labels.end(),
                      [](const auto& label) { return IsValidLabelName(label.first); });
      if (!valid) continue;
      ClientMetric m;
      m.labels = std::move(sample.labels);
      m.value = sample.value;
      family.metrics.push_back(std::move(m));
    }
    std::sort(family.metrics.begin(), family.metrics.end(),
              [](const ClientMetric& a, const ClientMetric& b) { return a.labels < b.labels; });
    return family;
  }

 private:
  const SampleCallback callback_;
};

}  // namespace

template <typename T>
Family<T>& Registry::Build(const std::string& name, const std::string& help) {
  MutexLock lock(&mu_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    auto* same = dynamic_cast<Family<T>*>(family.get());
    if (same == nullptr || same->help() != help) {
      FailOnMisuse("metric \"" + name + "\" is already registered with another type or help");
    }
    return *same;
  }
  CheckNewName(name);
  auto family = std::make_unique<Family<T>>(name, help);
  Family<T>& ref = *family;
  families_.push_back(std::move(family));
  return ref;
}

Family<Counter>& Registry::BuildCounter(const std::string& name, const std::string& help) {
  return Build<Counter>(name, help);
}

Family<Gauge>& Registry::BuildGauge(const std::string& name, const std::string& help) {
  return Build<Gauge>(name, help);
}

Family<Histogram>& Registry::BuildHistogram(const std::string& name, const std::string& help) {
  return Build<Histogram>(name, help);
}

void Registry::BuildCallback(const std::string& name, const std::string& help, MetricType type,
                             SampleCallback callback) {
  if (type == MetricType::kHistogram)
    FailOnMisuse("callback family \"" + name + "\" must be a counter or gauge");
  MutexLock lock(&mu_);
  CheckNewName(name);
  families_.push_back(std::make_unique<CallbackFamily>(name, help, type, std::move(callback)));
}

void Registry::CheckNewName(const std::string& name) const {
  if (!IsValidMetricName(name)) FailOnMisuse("invalid metric name \"" + name + "\"");
  for (const auto& family : families_) {
    if (family->name() == name) FailOnMisuse("metric \"" + name + "\" is already registered");
  }
}

std::vector<MetricFamily> Registry::Collect() const {
  std::vector<const FamilyBase*> families;
  {
    ReaderMutexLock lock(&mu_);
    for (const auto& family : families_) families.push_back(family.get());
  }
  // Families are never removed, so the pointers outlive the lock.
  std::vector<MetricFamily> out;
  out.reserve(families.size());
  for (const FamilyBase* family : families) out.push_back(family->Collect());
  return out;
}

}  // namespace clickd::metrics
