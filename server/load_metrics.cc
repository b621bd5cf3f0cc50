#include "server/load_metrics.h"

#include <functional>
#include <string>
#include <utility>

namespace clickd {
namespace {

// A gauge of one unlabelled series, `value()` at each scrape.
void BuildGauge(metrics::Registry* registry, const std::string& name, const std::string& help,
                std::function<double()> value) {
  registry->BuildCallback(name, help, metrics::MetricType::kGauge, [value = std::move(value)] {
    return std::vector<metrics::Sample>{{{}, value()}};
  });
}

}  // namespace

void RegisterLoadMetrics(metrics::Registry* registry, const Executor* executor,
                         std::vector<const ClickdService*> services, uint64_t max_open_streams) {
  BuildGauge(registry, "clickd_executor_queued_calls",
             "Calls waiting for a worker thread (--max_queued_calls is the limit).",
             [executor] { return static_cast<double>(executor->queued()); });
  BuildGauge(registry, "clickd_executor_running_calls", "Calls a worker thread is running.",
             [executor] { return static_cast<double>(executor->running()); });
  const double max_queued = static_cast<double>(executor->options().max_queued);
  BuildGauge(registry, "clickd_executor_max_queued_calls",
             "Calls that may wait for a worker before more are refused (--max_queued_calls).",
             [max_queued] { return max_queued; });
  const double threads = static_cast<double>(executor->options().threads);
  BuildGauge(registry, "clickd_executor_worker_threads",
             "Worker threads that run the calls' model work (--worker_threads).",
             [threads] { return threads; });
  BuildGauge(registry, "clickd_open_streams",
             "UpdateStream, UpdateStreamAcked and FeedbackStream calls open now.",
             [services = std::move(services)] {
               uint64_t open = 0;
               for (const ClickdService* service : services) open += service->open_streams();
               return static_cast<double>(open);
             });
  const double max_open = static_cast<double>(max_open_streams);
  BuildGauge(registry, "clickd_max_open_streams",
             "Streams that may be open at once before more are refused (--max_open_streams).",
             [max_open] { return max_open; });
}

}  // namespace clickd
