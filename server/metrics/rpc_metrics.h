// RpcMetrics: clickd_requests_total{method,code} and
// clickd_request_duration_seconds{method,code}, recorded once per finished
// RPC, failures included (docs/metrics.md).
//
// The methods are fixed at construction (the server passes every method of
// clickd.v1.Clickd), so a request looks its method up in a map that never
// changes, without a lock. Each method's series for a status code are added
// to their families on the first call that ends with that code and then
// cached in atomics; the OK series exist from the start, so that rates are
// defined before the first request.
//
// Thread safety: safe for concurrent access. After the first call of a
// (method, code) pair, Record takes no lock of clickd's: it increments the
// counter (a compare-and-swap) and observes the histogram, which takes that
// series' own mutex in prometheus-cpp (docs/metrics.md measures the cost).
#ifndef CLICKD_SERVER_METRICS_RPC_METRICS_H_
#define CLICKD_SERVER_METRICS_RPC_METRICS_H_

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {

class RpcMetrics {
 public:
  // Upper bounds of the duration buckets, in seconds: 25 us to 10 s in
  // 1-2.5-5 steps.
  static const Histogram::BucketBoundaries& DurationBuckets();

  RpcMetrics(Registry* registry, const std::vector<std::string>& methods);

  // Records one call of `method` that ended with `code` after `seconds`.
  // Calls of a method not given to the constructor are not recorded.
  void Record(std::string_view method, absl::StatusCode code, double seconds);

 private:
  // The gRPC codes, 0 (OK) to 16 (UNAUTHENTICATED).
  static constexpr int kCodes = 17;

  class Method {
   public:
    Method(RpcMetrics* owner, std::string name) : owner_(owner), name_(std::move(name)) {}
    void Record(int code, double seconds);

   private:
    RpcMetrics* const owner_;
    const std::string name_;
    // Null until the first call with that code.
    std::array<std::atomic<Counter*>, kCodes> requests_{};
    std::array<std::atomic<Histogram*>, kCodes> durations_{};
  };

  Family<Counter>& requests_;
  Family<Histogram>& durations_;
  absl::flat_hash_map<std::string, std::unique_ptr<Method>> methods_;  // never changes
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_RPC_METRICS_H_
