// ServerLoad: how much work waits for a worker, how much runs and how many
// streams are open, each beside its limit; what /metrics (clickd_executor_*,
// clickd_open_streams, clickd_max_open_streams; server/load_metrics.h) and
// the status page (server/status/) show of the server's load. Plain data,
// so that both can hold it without depending on the executor.
#ifndef CLICKD_SERVER_SERVER_LOAD_H_
#define CLICKD_SERVER_SERVER_LOAD_H_

#include <cstdint>
#include <functional>

namespace clickd {

struct ServerLoad {
  uint64_t queued_calls = 0;  // waiting for a worker
  uint64_t running_calls = 0;
  uint64_t max_queued_calls = 0;  // --max_queued_calls
  uint64_t worker_threads = 0;    // --worker_threads
  uint64_t open_streams = 0;
  uint64_t max_open_streams = 0;  // --max_open_streams
};

// Reads the load now; safe to call from any thread.
using ServerLoadReader = std::function<ServerLoad()>;

}  // namespace clickd

#endif  // CLICKD_SERVER_SERVER_LOAD_H_
