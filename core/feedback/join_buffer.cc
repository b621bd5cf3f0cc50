#include "core/feedback/join_buffer.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

// Counters are issued below the mask of their bits: the last one is never
// issued, so that no id is ever kIdsAssignedAtApply (all ones;
// feedback_loop.h).
uint64_t CounterMask(int counter_bits) { return (uint64_t{1} << counter_bits) - 1; }
constexpr std::string_view kMagic = "CJB2";  // clickd join buffer, format 2

}  // namespace

std::string_view JoinOutcomeName(JoinOutcome outcome) {
  switch (outcome) {
    case JoinOutcome::kJoined:
      return "joined";
    case JoinOutcome::kUnknown:
      return "unknown";
    case JoinOutcome::kExpired:
      return "expired";
    case JoinOutcome::kAlreadyLabelled:
      return "already_labelled";
    case JoinOutcome::kOtherModel:
      return "other_model";
  }
  return "?";
}

uint64_t JoinBuffer::ImpressionBytes(size_t features, size_t dense) {
  return sizeof(Entry) + features * sizeof(HashedFeature) + dense * sizeof(float);
}

uint64_t JoinBuffer::EntryBytes(const Entry& entry) {
  return entry.labelled ? sizeof(Entry)
                        : ImpressionBytes(entry.features.size(), entry.dense.size());
}

JoinBuffer::JoinBuffer(const Options& options)
    : model_tag_(options.model_tag),
      counter_bits_(64 - options.tag_bits),
      counter_limit_(CounterMask(64 - options.tag_bits)),
      ttl_us_(options.ttl_us),
      max_bytes_(options.max_bytes) {}

uint64_t JoinBuffer::IdOf(uint64_t counter) const {
  return (uint64_t{model_tag_} << counter_bits_) | counter;
}

int64_t JoinBuffer::Advance(int64_t now_us) {
  now_us_ = std::max(now_us_, now_us);
  return now_us_;
}

absl::Status JoinBuffer::Refusal(uint64_t in_use, absl::Span<const ImpressionExample> examples,
                                 uint64_t* needed) const {
  *needed = 0;
  for (const ImpressionExample& example : examples) {
    // Finite margins only: a snapshot must read back what was added.
    if (!std::isfinite(example.margin)) {
      return absl::InvalidArgumentError("an impression's margin is not finite");
    }
    *needed += ImpressionBytes(example.features.size(), example.dense.size());
  }
  if (in_use + *needed > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the impression join buffer is full: ", examples.size(), " impressions need ", *needed,
        " bytes and ", in_use, " of the model's feedback.max_buffer_bytes (", max_bytes_,
        ") are in use until impressions are labelled or expire; nothing was logged"));
  }
  const uint64_t first = first_counter_ + entries_.size();
  if (first + examples.size() > counter_limit_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("impression ids exhausted: the model has issued ", first, " of 2^48 - 1"));
  }
  return absl::OkStatus();
}

absl::Status JoinBuffer::CheckAdd(int64_t now_us,
                                  absl::Span<const ImpressionExample> examples) const {
  ReaderMutexLock lock(&mu_);
  const int64_t now = std::max(now_us_, now_us);
  uint64_t in_use = bytes_;
  for (const Entry& entry : entries_) {
    if (entry.expires_at_us > now) break;
    in_use -= EntryBytes(entry);
  }
  uint64_t needed = 0;
  return Refusal(in_use, examples, &needed);
}

absl::StatusOr<uint64_t> JoinBuffer::Add(int64_t now_us,
                                         absl::Span<const ImpressionExample> examples) {
  MutexLock lock(&mu_);
  const int64_t now = Advance(now_us);
  uint64_t needed = 0;
  if (absl::Status s = Refusal(bytes_, examples, &needed); !s.ok()) return s;
  const uint64_t first = first_counter_ + entries_.size();
  for (const ImpressionExample& example : examples) {
    Entry& entry = entries_.emplace_back();
    entry.logged_at_us = now;
    entry.expires_at_us = now + ttl_us_;
    entry.margin = example.margin;
    entry.features.assign(example.features.begin(), example.features.end());
    entry.dense.assign(example.dense.begin(), example.dense.end());
  }
  bytes_ += needed;
  pending_ += examples.size();
  return IdOf(first);
}

JoinOutcome JoinBuffer::Label(uint64_t id, int64_t now_us, Impression* joined) {
  MutexLock lock(&mu_);
  const int64_t now = Advance(now_us);
  if ((id >> counter_bits_) != model_tag_) return JoinOutcome::kOtherModel;
  const uint64_t counter = id & CounterMask(counter_bits_);
  if (counter >= first_counter_ + entries_.size()) return JoinOutcome::kUnknown;
  if (counter < first_counter_) return JoinOutcome::kExpired;
  Entry& entry = entries_[counter - first_counter_];
  if (entry.expires_at_us <= now) return JoinOutcome::kExpired;
  if (entry.labelled) return JoinOutcome::kAlreadyLabelled;
  joined->id = id;
  joined->logged_at_us = entry.logged_at_us;
  joined->margin = entry.margin;
  bytes_ -= EntryBytes(entry);
  joined->features = std::move(entry.features);
  joined->dense = std::move(entry.dense);
  entry.features = {};
  entry.dense = {};
  entry.labelled = true;
  bytes_ += EntryBytes(entry);
  --pending_;
  return JoinOutcome::kJoined;
}

void JoinBuffer::Expire(int64_t now_us, absl::FunctionRef<void(const Impression&)> unlabelled) {
  MutexLock lock(&mu_);
  const int64_t now = Advance(now_us);
  Impression impression;
  while (!entries_.empty() && entries_.front().expires_at_us <= now) {
    Entry& entry = entries_.front();
    bytes_ -= EntryBytes(entry);
    if (!entry.labelled) {
      impression.id = IdOf(first_counter_);
      impression.logged_at_us = entry.logged_at_us;
      impression.margin = entry.margin;
      impression.features = std::move(entry.features);
      impression.dense = std::move(entry.dense);
      unlabelled(impression);
      --pending_;
    }
    entries_.pop_front();
    ++first_counter_;
  }
}

std::optional<int64_t> JoinBuffer::NextExpiryUs() const {
  ReaderMutexLock lock(&mu_);
  if (entries_.empty()) return std::nullopt;
  return entries_.front().expires_at_us;
}

void JoinBuffer::SetLimits(int64_t ttl_us, uint64_t max_bytes) {
  MutexLock lock(&mu_);
  ttl_us_ = ttl_us;
  max_bytes_ = max_bytes;
}

JoinBufferStats JoinBuffer::Stats() const {
  ReaderMutexLock lock(&mu_);
  JoinBufferStats stats;
  stats.pending = pending_;
  stats.labelled = entries_.size() - pending_;
  stats.bytes = bytes_;
  stats.max_bytes = max_bytes_;
  stats.next_id = IdOf(first_counter_ + entries_.size());
  return stats;
}

// Format 2: "CJB2", now_us, first_counter, entry count (fixed64 each), then
// per entry logged_at_us, expires_at_us (fixed64), labelled (fixed32 0/1),
// margin (float), feature count, dense count (fixed32), the features (fixed64 key, float
// value) and dense values (float); then the masked CRC32C of all before it.
std::string JoinBuffer::Encode() const {
  ReaderMutexLock lock(&mu_);
  std::string out(kMagic);
  coding::PutFixed64(&out, static_cast<uint64_t>(now_us_));
  coding::PutFixed64(&out, first_counter_);
  coding::PutFixed64(&out, entries_.size());
  for (const Entry& entry : entries_) {
    coding::PutFixed64(&out, static_cast<uint64_t>(entry.logged_at_us));
    coding::PutFixed64(&out, static_cast<uint64_t>(entry.expires_at_us));
    coding::PutFixed32(&out, entry.labelled ? 1 : 0);
    coding::PutFloat(&out, entry.margin);
    coding::PutFixed32(&out, static_cast<uint32_t>(entry.features.size()));
    coding::PutFixed32(&out, static_cast<uint32_t>(entry.dense.size()));
    for (const HashedFeature& f : entry.features) {
      coding::PutFixed64(&out, f.key);
      coding::PutFloat(&out, f.value);
    }
    for (float v : entry.dense) coding::PutFloat(&out, v);
  }
  crc32c::Seal(&out);
  return out;
}

absl::StatusOr<std::unique_ptr<JoinBuffer>> JoinBuffer::Decode(const Options& options,
                                                               std::string_view bytes) {
  const auto damaged = [](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("impression join buffer damaged: ", what));
  };
  // The magic, then at least the CRC after it.
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return damaged("no CJB2 header");
  }
  std::string_view body;
  if (!crc32c::Unseal(bytes, &body)) return damaged("checksum mismatch");
  coding::Decoder in(body.substr(kMagic.size()));
  auto buffer = std::make_unique<JoinBuffer>(options);
  uint64_t now = 0, first_counter = 0, count = 0;
  if (!in.GetFixed64(&now) || !in.GetFixed64(&first_counter) || !in.GetFixed64(&count)) {
    return damaged("short header");
  }
  // Every entry takes at least 32 bytes: a count beyond that is damage, not
  // a reason to allocate.
  if (count > in.remaining().size() / 32 || first_counter + count > buffer->counter_limit_) {
    return damaged(absl::StrCat("entry count ", count, " does not fit the data"));
  }
  MutexLock lock(&buffer->mu_);
  buffer->now_us_ = static_cast<int64_t>(now);
  buffer->first_counter_ = first_counter;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t logged = 0, expires = 0;
    uint32_t labelled = 0, features = 0, dense = 0;
    float margin = 0;
    if (!in.GetFixed64(&logged) || !in.GetFixed64(&expires) || !in.GetFixed32(&labelled) ||
        !in.GetFloat(&margin) || !in.GetFixed32(&features) || !in.GetFixed32(&dense)) {
      return damaged(absl::StrCat("entry ", i, " is cut short"));
    }
    if (labelled > 1 || (labelled == 1 && (features != 0 || dense != 0)) ||
        !std::isfinite(margin) ||
        uint64_t{features} * 12 + uint64_t{dense} * 4 > in.remaining().size()) {
      return damaged(absl::StrCat("entry ", i, " has impossible counts"));
    }
    Entry& entry = buffer->entries_.emplace_back();
    entry.logged_at_us = static_cast<int64_t>(logged);
    entry.expires_at_us = static_cast<int64_t>(expires);
    entry.labelled = labelled == 1;
    entry.margin = margin;
    entry.features.resize(features);
    for (HashedFeature& f : entry.features) {
      in.GetFixed64(&f.key);
      in.GetFloat(&f.value);
      if (!std::isfinite(f.value))
        return damaged(absl::StrCat("entry ", i, ": a value not finite"));
    }
    entry.dense.resize(dense);
    for (float& v : entry.dense) {
      in.GetFloat(&v);
      if (!std::isfinite(v))
        return damaged(absl::StrCat("entry ", i, ": a dense value not finite"));
    }
    buffer->bytes_ += EntryBytes(entry);
    buffer->pending_ += entry.labelled ? 0 : 1;
  }
  if (!in.remaining().empty()) {
    return damaged(absl::StrCat(in.remaining().size(), " bytes after the last entry"));
  }
  return buffer;
}

}  // namespace clickd
