#include "core/persist/idempotency_window.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kMagic = "CIW1";  // clickd idempotency window, format 1
// A key is at most this long (server/limits.h allows 128 bytes).
constexpr uint32_t kMaxKeyBytes = 1024;

}  // namespace

bool IdempotencyWindow::Contains(std::string_view key, int64_t now_us) const {
  ReaderMutexLock lock(&mu_);
  auto it = keys_.find(absl::string_view(key.data(), key.size()));
  // Held but maybe past the window at `now_us` (forgotten at the next insert).
  return it != keys_.end() && std::max(now_us_, now_us) - it->second < options_.window_us;
}

void IdempotencyWindow::ForgetOld(int64_t now) {
  while (!order_.empty() &&
         (now - order_.front().first >= options_.window_us || order_.size() > options_.max_keys)) {
    keys_.erase(order_.front().second);
    order_.pop_front();
  }
}

void IdempotencyWindow::Insert(std::string_view key, int64_t now_us) {
  MutexLock lock(&mu_);
  now_us_ = std::max(now_us_, now_us);
  ForgetOld(now_us_);
  // A key already held keeps its first time: the window runs from the
  // first time it was learned.
  if (keys_.try_emplace(std::string(key), now_us_).second) {
    order_.emplace_back(now_us_, std::string(key));
  }
  ForgetOld(now_us_);
}

size_t IdempotencyWindow::size() const {
  ReaderMutexLock lock(&mu_);
  return order_.size();
}

// "CIW1", now_us (fixed64), count (fixed32), then per key its time
// (fixed64) and the key (fixed32 length + bytes); the masked CRC32C last.
std::string IdempotencyWindow::Encode() const {
  ReaderMutexLock lock(&mu_);
  std::string out(kMagic);
  coding::PutFixed64(&out, static_cast<uint64_t>(now_us_));
  coding::PutFixed32(&out, static_cast<uint32_t>(order_.size()));
  for (const auto& [time, key] : order_) {
    coding::PutFixed64(&out, static_cast<uint64_t>(time));
    coding::PutString(&out, key);
  }
  crc32c::Seal(&out);
  return out;
}

absl::StatusOr<std::unique_ptr<IdempotencyWindow>> IdempotencyWindow::Decode(
    const IdempotencyOptions& options, std::string_view bytes) {
  const auto damaged = [](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("idempotency window damaged: ", what));
  };
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return damaged("no CIW1 header");
  }
  std::string_view body;
  if (!crc32c::Unseal(bytes, &body)) return damaged("checksum mismatch");
  coding::Decoder in(body.substr(kMagic.size()));
  uint64_t now = 0;
  uint32_t count = 0;
  if (!in.GetFixed64(&now) || !in.GetFixed32(&count)) return damaged("short header");
  // Every key takes at least 12 bytes.
  if (count > in.remaining().size() / 12) return damaged("key count does not fit the data");
  auto window = std::make_unique<IdempotencyWindow>(options);
  MutexLock lock(&window->mu_);
  window->now_us_ = static_cast<int64_t>(now);
  int64_t previous = INT64_MIN;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t time = 0;
    std::string key;
    if (!in.GetFixed64(&time) || !in.GetString(&key)) {
      return damaged(absl::StrCat("key ", i, " is cut short"));
    }
    const int64_t t = static_cast<int64_t>(time);
    if (key.size() > kMaxKeyBytes || t < previous || t > window->now_us_ ||
        !window->keys_.try_emplace(key, t).second) {
      return damaged(absl::StrCat("key ", i, " is out of order, too long or repeated"));
    }
    previous = t;
    window->order_.emplace_back(t, std::move(key));
  }
  if (!in.remaining().empty()) return damaged("bytes after the last key");
  // The current options may hold fewer keys than the writer's did.
  window->ForgetOld(window->now_us_);
  return window;
}

}  // namespace clickd
