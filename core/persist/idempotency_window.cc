#include "core/persist/idempotency_window.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr std::string_view kMagic = "CIW1";  // clickd idempotency window, format 1
// A key is at most this long (server/limits.h allows 128 bytes).
constexpr uint32_t kMaxKeyBytes = 1024;
// Starts every position key: 0x1f is not printable, so no RPC's key can.
constexpr absl::string_view kPositionPrefix = "\x1fpos\x1f";
constexpr char kSep = '\x1f';

std::string PartitionName(std::string_view topic, int32_t partition) {
  return absl::StrCat(absl::string_view(topic.data(), topic.size()), absl::string_view(&kSep, 1),
                      partition);
}

}  // namespace

std::string IdempotencyWindow::FeedbackKey(std::string_view key) {
  // A position is one per topic and partition, whatever the record it
  // travels with (a Kafka feedback topic's labels).
  if (absl::StartsWith(absl::string_view(key.data(), key.size()), kPositionPrefix)) {
    return std::string(key);
  }
  return absl::StrCat("\x1e", absl::string_view(key.data(), key.size()));
}

std::string IdempotencyWindow::PositionKey(std::string_view topic, int32_t partition,
                                           int64_t next_offset) {
  return absl::StrCat(kPositionPrefix, PartitionName(topic, partition), absl::string_view(&kSep, 1),
                      next_offset);
}

int64_t IdempotencyWindow::Position(std::string_view topic, int32_t partition) const {
  ReaderMutexLock lock(&mu_);
  auto it = positions_.find(PartitionName(topic, partition));
  return it == positions_.end() ? -1 : it->second;
}

bool IdempotencyWindow::ParsePositionKey(std::string_view key, std::string* topic,
                                         int32_t* partition, int64_t* next_offset) {
  if (!absl::StartsWith(absl::string_view(key.data(), key.size()), kPositionPrefix)) return false;
  std::string_view rest = key.substr(kPositionPrefix.size());
  const size_t last = rest.rfind(kSep);
  if (last == std::string_view::npos || last == 0) return false;
  const size_t middle = rest.rfind(kSep, last - 1);
  if (middle == std::string_view::npos) return false;
  if (!absl::SimpleAtoi(absl::string_view(rest.data() + last + 1, rest.size() - last - 1),
                        next_offset) ||
      !absl::SimpleAtoi(absl::string_view(rest.data() + middle + 1, last - middle - 1),
                        partition)) {
    return false;
  }
  *topic = std::string(rest.substr(0, middle));
  return true;
}

bool IdempotencyWindow::SetPosition(std::string_view key) {
  if (!absl::StartsWith(absl::string_view(key.data(), key.size()), kPositionPrefix)) return false;
  std::string_view rest = key.substr(kPositionPrefix.size());
  const size_t last = rest.rfind(kSep);
  int64_t offset = 0;
  if (last == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(rest.data() + last + 1, rest.size() - last - 1),
                        &offset)) {
    return true;  // a malformed position is dropped, never taken for a key
  }
  positions_[std::string(rest.substr(0, last))] = offset;
  return true;
}

bool IdempotencyWindow::Contains(std::string_view key, int64_t now_us) const {
  if (absl::StartsWith(absl::string_view(key.data(), key.size()), kPositionPrefix)) return false;
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
  if (SetPosition(key)) return;
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
  return order_.size() + positions_.size();
}

// "CIW1", now_us (fixed64), count (fixed32), then per key its time
// (fixed64) and the key (fixed32 length + bytes); the masked CRC32C last.
// Source positions follow the keys as position keys at now_us.
std::string IdempotencyWindow::Encode() const {
  ReaderMutexLock lock(&mu_);
  std::string out(kMagic);
  coding::PutFixed64(&out, static_cast<uint64_t>(now_us_));
  coding::PutFixed32(&out, static_cast<uint32_t>(order_.size() + positions_.size()));
  for (const auto& [time, key] : order_) {
    coding::PutFixed64(&out, static_cast<uint64_t>(time));
    coding::PutString(&out, key);
  }
  // Sorted, so that equal windows encode to equal bytes.
  std::vector<std::pair<std::string, int64_t>> positions(positions_.begin(), positions_.end());
  std::sort(positions.begin(), positions.end());
  for (const auto& [partition, offset] : positions) {
    coding::PutFixed64(&out, static_cast<uint64_t>(now_us_));
    coding::PutString(
        &out, absl::StrCat(kPositionPrefix, partition, absl::string_view(&kSep, 1), offset));
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
    if (key.size() <= kMaxKeyBytes && window->SetPosition(key)) continue;
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

absl::Status IdempotencyWindow::Restore(std::string_view bytes) {
  auto decoded = Decode(options_, bytes);
  if (!decoded.ok()) return decoded.status();
  IdempotencyWindow& from = **decoded;
  MutexLock theirs(&from.mu_);
  MutexLock ours(&mu_);
  now_us_ = from.now_us_;
  order_ = std::move(from.order_);
  keys_ = std::move(from.keys_);
  positions_ = std::move(from.positions_);
  return absl::OkStatus();
}

}  // namespace clickd
