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
#include "server/server_load.h"
#include "server/service.h"

namespace clickd {

// The load of `executor` and of the streams open on `services` (summed),
// beside `max_open_streams` (each service's limit). `executor` and
// `services` must outlive the reader.
ServerLoadReader NewServerLoadReader(const Executor* executor,
                                     std::vector<const ClickdService*> services,
                                     uint64_t max_open_streams);

// Registers clickd_executor_queued_calls, clickd_executor_running_calls,
// clickd_executor_max_queued_calls, clickd_executor_worker_threads,
// clickd_open_streams and clickd_max_open_streams, each read with `read`
// at scrape time: what `read` reads must outlive every Collect of
// `registry`.
void RegisterLoadMetrics(metrics::Registry* registry, ServerLoadReader read);

}  // namespace clickd

#endif  // CLICKD_SERVER_LOAD_METRICS_H_
