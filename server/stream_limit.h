// StreamLimit: how many streaming calls (UpdateStream, UpdateStreamAcked,
// FeedbackStream) are open at once, server-wide. Each open stream holds a
// reactor, gRPC's buffers and one parsed message of up to
// --max_message_bytes, and holds them for as long as its caller keeps it
// open, so a caller with many connections could otherwise hold memory
// without bound. A stream beyond the limit is refused when it opens, with
// RESOURCE_EXHAUSTED naming the limit; streams already open go on.
//
// The same counting bounds other calls that hold memory while they run
// (GetModel's state_digests, --max_concurrent_digests): `holders` names
// what is counted and `flag` the limit in the refusal.
//
// Thread safety: Open may race with itself and with tickets' releases; a
// ticket is owned by the one stream that got it.
#ifndef CLICKD_SERVER_STREAM_LIMIT_H_
#define CLICKD_SERVER_STREAM_LIMIT_H_

#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace clickd {

class StreamLimit {
 public:
  // At most `max` open streams (0: none at all).
  explicit StreamLimit(uint64_t max, std::string_view holders = "open streams",
                       std::string_view flag = "max_open_streams")
      : max_(max), holders_(holders.data(), holders.size()), flag_(flag.data(), flag.size()) {}

  StreamLimit(const StreamLimit&) = delete;
  StreamLimit& operator=(const StreamLimit&) = delete;

  // One open stream's place; released when destroyed. Empty (holding no
  // place) when default-made or moved from.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : limit_(std::exchange(other.limit_, nullptr)) {}
    Ticket& operator=(Ticket&& other) noexcept {
      if (this != &other) {
        Release();
        limit_ = std::exchange(other.limit_, nullptr);
      }
      return *this;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { Release(); }

    bool holds_place() const { return limit_ != nullptr; }

   private:
    friend class StreamLimit;
    explicit Ticket(StreamLimit* limit) : limit_(limit) {}
    void Release() {
      if (limit_ != nullptr) limit_->open_.fetch_sub(1, std::memory_order_acq_rel);
      limit_ = nullptr;
    }
    StreamLimit* limit_ = nullptr;
  };

  // A place for a stream of `method`, or RESOURCE_EXHAUSTED if `max` are
  // open.
  absl::StatusOr<Ticket> Open(std::string_view method) {
    uint64_t open = open_.load(std::memory_order_relaxed);
    do {
      if (open >= max_) {
        return absl::ResourceExhaustedError(
            absl::StrCat(absl::string_view(method.data(), method.size()), ": too many ", holders_,
                         ": ", open, " are open; the limit is ", max_, " (", flag_, ")"));
      }
    } while (!open_.compare_exchange_weak(open, open + 1, std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
    return Ticket(this);
  }

  uint64_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  const uint64_t max_;
  // Literals, which outlive the limit (absl's string_view: Debian's absl
  // does not take std::string_view in StrCat).
  const absl::string_view holders_;
  const absl::string_view flag_;
  std::atomic<uint64_t> open_{0};
};

}  // namespace clickd

#endif  // CLICKD_SERVER_STREAM_LIMIT_H_
