#include "server/load_metrics.h"

#include <string>
#include <utility>

namespace clickd {
namespace {

// A gauge of one unlabelled series: the field `field` of the load at each
// scrape.
void BuildGauge(metrics::Registry* registry, const std::string& name, const std::string& help,
                ServerLoadReader read, uint64_t ServerLoad::*field) {
  registry->BuildCallback(name, help, metrics::MetricType::kGauge, [read = std::move(read), field] {
    const double value = static_cast<double>(read().*field);
    return std::vector<metrics::Sample>{{{}, value}};
  });
}

}  // namespace

ServerLoadReader NewServerLoadReader(const Executor* executor,
                                     std::vector<const ClickdService*> services,
                                     uint64_t max_open_streams) {
  return [executor, services = std::move(services), max_open_streams] {
    ServerLoad load;
    load.queued_calls = executor->queued();
    load.running_calls = executor->running();
    load.max_queued_calls = executor->options().max_queued;
    load.worker_threads = static_cast<uint64_t>(executor->options().threads);
    for (const ClickdService* service : services) load.open_streams += service->open_streams();
    load.max_open_streams = max_open_streams;
    return load;
  };
}

void RegisterLoadMetrics(metrics::Registry* registry, ServerLoadReader read) {
  BuildGauge(registry, "clickd_executor_queued_calls",
             "Calls waiting for a worker thread (--max_queued_calls is the limit).", read,
             &ServerLoad::queued_calls);
  BuildGauge(registry, "clickd_executor_running_calls", "Calls a worker thread is running.", read,
             &ServerLoad::running_calls);
  BuildGauge(registry, "clickd_executor_max_queued_calls",
             "Calls that may wait for a worker before more are refused (--max_queued_calls).", read,
             &ServerLoad::max_queued_calls);
  BuildGauge(registry, "clickd_executor_worker_threads",
             "Worker threads that run the calls' model work (--worker_threads).", read,
             &ServerLoad::worker_threads);
  BuildGauge(registry, "clickd_open_streams",
             "UpdateStream, UpdateStreamAcked and FeedbackStream calls open now.", read,
             &ServerLoad::open_streams);
  BuildGauge(registry, "clickd_max_open_streams",
             "Streams that may be open at once before more are refused (--max_open_streams).", read,
             &ServerLoad::max_open_streams);
}

}  // namespace clickd
