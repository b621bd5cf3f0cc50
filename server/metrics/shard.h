// Per-thread shards for counters and histograms: each thread adds to its own
// cache line, so threads counting at once do not contend on one atomic, and
// a scrape sums the shards.
#ifndef CLICKD_SERVER_METRICS_SHARD_H_
#define CLICKD_SERVER_METRICS_SHARD_H_

#include <atomic>

namespace clickd::metrics {

inline constexpr int kShards = 8;

// Separates what different threads write (a typical cache line).
inline constexpr int kCacheLine = 64;

// The calling thread's shard: threads take shards round-robin on first use,
// so up to kShards threads never share one.
inline int ThisThreadShard() {
  static std::atomic<unsigned> next{0};
  thread_local const int shard =
      static_cast<int>(next.fetch_add(1, std::memory_order_relaxed) % kShards);
  return shard;
}

// Adds `v` to `a` with relaxed order: counts need atomicity, not ordering.
inline void AtomicAdd(std::atomic<double>& a, double v) {
  double current = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(current, current + v, std::memory_order_relaxed)) {
  }
}

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_SHARD_H_
