// The server's load, for /metrics: how much work waits for a worker, how
// much runs, and how many streams are open, each beside its limit, so that
// an operator sees a server filling up before it starts refusing calls
// with RESOURCE_EXHAUSTED (docs/metrics.md, "Load").
#ifndef CLICKD_SERVER_LOAD_METRICS_H_
#define CLICKD_SERVER_LOAD_METRICS_H_

#include <cstdint>
#include <vector>

#include "server/executor.h"
#include "server/metrics/registry.h"
#include "server/service.h"

namespace clickd {

// Registers clickd_executor_queued_calls, clickd_executor_running_calls,
// clickd_executor_max_queued_calls, clickd_executor_worker_threads,
// clickd_open_streams (summed over `services`) and clickd_max_open_streams
// (`max_open_streams`, each service's limit). Computed at scrape time;
// `executor` and `services` must outlive every Collect of `registry`.
void RegisterLoadMetrics(metrics::Registry* registry, const Executor* executor,
                         std::vector<const ClickdService*> services, uint64_t max_open_streams);

}  // namespace clickd

#endif  // CLICKD_SERVER_LOAD_METRICS_H_
