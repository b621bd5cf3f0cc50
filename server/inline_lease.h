// InlineLease: the answer to "is this call's work done on the gRPC thread
// that received it?", holding, for as long as that work runs, the one slot
// a large Predict needs to be scored there.
//
// Handing a call to a worker costs two thread switches: 25-55 us of a
// 100-candidate Predict's 250-330 us at 1 in flight on the 2-core benchmark
// machine (docs/performance_rpc.md). When the server is quiet nothing is
// gained by paying it: the workers are idle and gRPC's threads are free. So a Predict
// too large for the always-inline bound may still be scored inline, but
// only while the executor is idle and no other large Predict holds the
// slot: under load, large Predicts queue for the workers as before, and at
// most one gRPC thread is ever busy scoring one.
//
// Thread safety: Acquire may race with itself and with releases; a lease
// is owned by the one call that got it.
#ifndef CLICKD_SERVER_INLINE_LEASE_H_
#define CLICKD_SERVER_INLINE_LEASE_H_

#include <atomic>

namespace clickd {

class InlineLease {
 public:
  // Work for the executor.
  InlineLease() = default;
  // Work done here that needs no slot (a small Predict, or one answered at
  // once with an error).
  static InlineLease Here() { return InlineLease(true, nullptr); }
  // Work done here holding `*slot` (false: free) if it was free; else work
  // for the executor.
  static InlineLease TryAcquire(std::atomic<bool>* slot) {
    bool free = false;
    if (!slot->compare_exchange_strong(free, true, std::memory_order_acquire)) return {};
    return InlineLease(true, slot);
  }

  InlineLease(InlineLease&& other) noexcept : here_(other.here_), slot_(other.slot_) {
    other.slot_ = nullptr;
  }
  InlineLease& operator=(InlineLease&&) = delete;
  InlineLease(const InlineLease&) = delete;
  InlineLease& operator=(const InlineLease&) = delete;
  ~InlineLease() {
    if (slot_ != nullptr) slot_->store(false, std::memory_order_release);
  }

  explicit operator bool() const { return here_; }
  bool holds_slot() const { return slot_ != nullptr; }

 private:
  InlineLease(bool here, std::atomic<bool>* slot) : here_(here), slot_(slot) {}

  bool here_ = false;
  std::atomic<bool>* slot_ = nullptr;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_INLINE_LEASE_H_
