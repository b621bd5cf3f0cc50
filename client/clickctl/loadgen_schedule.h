// OpenLoopSchedule: when `clickctl loadgen --qps=Q` intends to send each
// request. Request i is due at start + i / Q, computed from i directly (not
// by adding 1/Q repeatedly) so that rounding never accumulates into drift.
// The open loop measures each latency from this intended time, not from when
// the request actually left, so a client or server that falls behind cannot
// hide the wait (no coordinated omission). Pure; immutable, so safe to share.
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_SCHEDULE_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_SCHEDULE_H_

#include <cmath>
#include <cstdint>

namespace clickd {

class OpenLoopSchedule {
 public:
  // `rate`: requests per second, > 0.
  explicit OpenLoopSchedule(double rate) : nanos_per_request_(1e9L / rate) {}

  // Nanoseconds from the start at which request `i` (0-based) is due.
  int64_t DueNanos(uint64_t i) const {
    return static_cast<int64_t>(std::llround(static_cast<long double>(i) * nanos_per_request_));
  }

  // How many requests are due strictly before `nanos` after the start.
  uint64_t DueBefore(int64_t nanos) const {
    if (nanos <= 0) return 0;
    uint64_t n = static_cast<uint64_t>(std::ceil(nanos / nanos_per_request_));
    // Correct the rounding of the division against DueNanos itself.
    while (n > 0 && DueNanos(n - 1) >= nanos) --n;
    while (DueNanos(n) < nanos) ++n;
    return n;
  }

 private:
  long double nanos_per_request_;
};

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_SCHEDULE_H_
