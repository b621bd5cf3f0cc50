#include "server/metrics/rpc_metrics.h"

namespace clickd::metrics {

const Histogram::BucketBoundaries& RpcMetrics::DurationBuckets() {
  static const auto* const kBuckets = new Histogram::BucketBoundaries{
      25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
      25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1,    2.5,    5,    10};
  return *kBuckets;
}

RpcMetrics::RpcMetrics(Registry* registry, const std::vector<std::string>& methods)
    : requests_(registry->BuildCounter(
          "clickd_requests_total",
          "RPCs of clickd.v1.Clickd that finished, by method and gRPC status code.")),
      durations_(registry->BuildHistogram(
          "clickd_request_duration_seconds",
          "Time the server spent on each RPC of clickd.v1.Clickd, from the handler's start to "
          "its status, by method and gRPC status code.")) {
  for (const std::string& name : methods) {
    auto [it, inserted] = methods_.try_emplace(name, nullptr);
    if (!inserted) continue;
    it->second = std::make_unique<Method>(this, name);
    // Rates over OK calls exist from the first scrape.
    requests_.Add({{"method", name}, {"code", "OK"}});
    durations_.Add({{"method", name}, {"code", "OK"}}, DurationBuckets());
  }
}

void RpcMetrics::Record(std::string_view method, absl::StatusCode code, double seconds) {
  auto it = methods_.find(absl::string_view(method.data(), method.size()));
  if (it == methods_.end()) return;
  int index = static_cast<int>(code);
  if (index < 0 || index >= kCodes) index = static_cast<int>(absl::StatusCode::kUnknown);
  it->second->Record(index, seconds);
}

void RpcMetrics::Method::Record(int code, double seconds) {
  Counter* requests = requests_[code].load(std::memory_order_acquire);
  Histogram* duration = durations_[code].load(std::memory_order_acquire);
  if (requests == nullptr || duration == nullptr) {
    // First call with this code: Add returns the same series to every
    // thread that races here, so storing twice is harmless.
    const Labels labels = {{"method", name_},
                           {"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}};
    requests = &owner_->requests_.Add(labels);
    duration = &owner_->durations_.Add(labels, DurationBuckets());
    requests_[code].store(requests, std::memory_order_release);
    durations_[code].store(duration, std::memory_order_release);
  }
  requests->Increment();
  duration->Observe(seconds);
}

}  // namespace clickd::metrics
