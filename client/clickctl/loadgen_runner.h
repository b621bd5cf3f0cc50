// The load loops of `clickctl loadgen`, independent of which RPC they call.
//
// A CallIssuer starts one call; RunLoad drives it in one of two modes:
//
//  * Closed loop (concurrency N): N calls are always in flight. Each call's
//    completion starts the next one from the gRPC callback thread, with no
//    hand-off to another thread; latency runs from the call's start to its
//    completion.
//  * Open loop (target_qps Q): call i is due at t0 + i / Q
//    (loadgen_schedule.h) whatever happened to earlier calls. One thread
//    sends each call at its due time, and its latency runs from that due
//    time, not from when it actually left, so a client that falls behind
//    shows the wait in the latencies (no coordinated omission) and reports
//    how late its sends were.
//
// Calls are measured once a warmup has passed; the run stops issuing at the
// end of the measured window or after max_requests measured calls, then
// waits for the calls in flight (each has a deadline). Every loop is bounded
// in time and count.
//
// Thread safety: RunLoad may be called from one thread at a time per issuer;
// it calls the issuer from its own thread and from gRPC's.
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_RUNNER_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_RUNNER_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "client/clickctl/loadgen_histogram.h"

namespace clickd {

// Starts calls of one kind (Predict, Update, health Check...).
class CallIssuer {
 public:
  using Done = std::function<void(const grpc::Status&)>;
  virtual ~CallIssuer() = default;

  // Starts call number `index` on `context` (its deadline is set). `done`
  // runs exactly once with the call's status, on any thread (possibly before
  // Start returns, for a call that fails at once); it must be the last thing
  // the issuer's completion touches, as RunLoad may return, and the issuer
  // be destroyed, as soon as the last `done` has returned. An issuer that
  // finds the response malformed passes an error status of its own.
  virtual void Start(uint64_t index, grpc::ClientContext* context, Done done) = 0;

  // The work of call `index` in the unit the report counts: candidates of a
  // Predict, examples of an Update; 1 for a health check.
  virtual uint64_t Units(uint64_t index) const = 0;
};

struct LoadOptions {
  int concurrency = 1;    // closed loop: calls in flight (when target_qps is 0)
  double target_qps = 0;  // > 0: open loop at this rate
  absl::Duration warmup = absl::Seconds(1);
  absl::Duration duration = absl::Seconds(5);
  uint64_t max_requests = 10'000'000;           // measured calls
  absl::Duration deadline = absl::Seconds(10);  // of every call
  // Open loop: at most this many calls in flight; a send waits for a slot
  // (its latency still counts from its due time).
  int64_t max_in_flight = 10'000;
  // update_stream: when set, message i carries idempotency key prefix + i.
  std::string idempotency_key_prefix;
};

struct LoadResult {
  LatencySummary latency;  // of every measured call, failed or not
  uint64_t requests = 0;   // measured calls completed
  uint64_t ok = 0;
  uint64_t ok_units = 0;  // CallIssuer::Units summed over the measured calls that succeeded
  std::map<std::string, uint64_t> errors;             // by status code name
  std::map<std::string, std::string> error_examples;  // the first message of each code
  uint64_t warmup_requests = 0;
  // From the end of the warmup to the last measured completion.
  double seconds = 0;
  // CPU time (user + system) this process spent during the run, warmup
  // included: with requests + warmup_requests, the client's cost per call.
  double cpu_seconds = 0;
  // Open loop: how much later than due the measured sends left (the worst
  // and the last one), and the calls never sent because the client fell
  // more than a deadline behind the end of the window.
  double max_send_lag_us = 0;
  double final_send_lag_us = 0;
  uint64_t unsent = 0;
  // False if calls were still in flight long after their deadlines; then
  // RunLoad returns without waiting for them and the issuer must outlive
  // them (the caller should exit the process).
  bool drained = true;

  uint64_t errors_total() const {
    uint64_t n = 0;
    for (const auto& [code, count] : errors) n += count;
    return n;
  }
  double rate() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0; }
  double units_rate() const { return seconds > 0 ? static_cast<double>(ok_units) / seconds : 0; }
  double cpu_us_per_call() const {
    const uint64_t calls = requests + warmup_requests;
    return calls > 0 ? cpu_seconds * 1e6 / static_cast<double>(calls) : 0;
  }
};

LoadResult RunLoad(CallIssuer& issuer, const LoadOptions& options);

// CPU time (user + system) this process has used so far, in seconds.
double ProcessCpuSeconds();

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_RUNNER_H_
