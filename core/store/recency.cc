#include "core/store/recency.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"

namespace clickd {

namespace {

constexpr uint8_t kCodes = 15;  // codes 1..15; 0 is "never"

// Epochs since `code`'s, at `now`; "never" is older than any.
int Age(uint8_t code, uint8_t now) {
  if (code == 0) return kCodes + 1;
  return (now + kCodes - code) % kCodes;
}

}  // namespace

TtlSchedule::TtlSchedule(uint64_t ttl_rounds, int num_shards) {
  if (ttl_rounds == 0) return;
  epoch_rounds_ = (ttl_rounds + kEpochsPerTtl - 1) / kEpochsPerTtl;
  const int shards = std::max(1, num_shards);
  offsets_.resize(static_cast<size_t>(shards));
  for (int s = 0; s < shards; ++s) {
    offsets_[s] = static_cast<uint64_t>(static_cast<unsigned __int128>(s) * epoch_rounds_ /
                                        static_cast<uint64_t>(shards));
  }
}

uint8_t TtlSchedule::CodeAt(uint64_t round) const {
  if (!enabled()) return 0;
  return static_cast<uint8_t>((round / epoch_rounds_) % kCodes + 1);
}

RecencyMarks::RecencyMarks()
    : log2_buckets_(kMinLog2Buckets), nibbles_((size_t{1} << kMinLog2Buckets) / 2, 0) {}

bool RecencyMarks::Fresh(uint8_t code, uint8_t now) {
  // The current epoch and the kEpochsPerTtl before it: a key learned in
  // epoch e is kept through the sweeps of epoch e + 8 (at least 8 whole
  // epochs, the TTL, after its last step).
  return Age(code, now) <= TtlSchedule::kEpochsPerTtl;
}

void RecencyMarks::Mark(uint64_t key, uint8_t code, size_t coordinates) {
  while (coordinates > buckets() && log2_buckets_ < kMaxLog2Buckets) {
    Resize(log2_buckets_ + 1, code);
  }
  Set(Bucket(key), code);
}

void RecencyMarks::Refit(size_t coordinates, uint8_t now) {
  for (size_t b = 0; b < buckets(); ++b) {
    if (!Fresh(Get(b), now)) Set(b, 0);
  }
  const int wanted = coordinates <= 1 ? 0 : std::bit_width(coordinates - 1);
  Resize(std::clamp(wanted, kMinLog2Buckets, kMaxLog2Buckets), now);
}

void RecencyMarks::Resize(int log2_buckets, uint8_t now) {
  if (log2_buckets == log2_buckets_) return;
  std::vector<uint8_t> old;
  old.swap(nibbles_);
  const int old_log2 = log2_buckets_;
  auto old_code = [&old](size_t b) -> uint8_t { return (old[b >> 1] >> ((b & 1) * 4)) & 0xF; };
  log2_buckets_ = log2_buckets;
  nibbles_.assign(buckets() / 2, 0);
  if (log2_buckets > old_log2) {
    // A key's bucket index is the top bits of its hash: new bucket b
    // splits old bucket b >> shift.
    const int shift = log2_buckets - old_log2;
    for (size_t b = 0; b < buckets(); ++b) Set(b, old_code(b >> shift));
    return;
  }
  // Old buckets b << shift .. (b + 1) << shift merge into b, keeping the
  // most recent code.
  const int shift = old_log2 - log2_buckets;
  for (size_t b = 0; b < buckets(); ++b) {
    uint8_t best = 0;
    for (size_t o = b << shift; o < (b + 1) << shift; ++o) {
      if (Age(old_code(o), now) < Age(best, now)) best = old_code(o);
    }
    Set(b, best);
  }
}

void RecencyMarks::AppendTo(std::string* out) const {
  out->push_back(static_cast<char>(log2_buckets_));
  out->append(reinterpret_cast<const char*>(nibbles_.data()), nibbles_.size());
}

bool RecencyMarks::ParseFrom(std::string_view* in) {
  if (in->empty()) return false;
  const int log2 = static_cast<uint8_t>((*in)[0]);
  if (log2 < kMinLog2Buckets || log2 > kMaxLog2Buckets) return false;
  const size_t bytes = (size_t{1} << log2) / 2;
  if (in->size() - 1 < bytes) return false;
  log2_buckets_ = log2;
  nibbles_.assign(reinterpret_cast<const uint8_t*>(in->data()) + 1,
                  reinterpret_cast<const uint8_t*>(in->data()) + 1 + bytes);
  in->remove_prefix(1 + bytes);
  return true;
}

absl::StatusOr<std::vector<RecencyMarks>> DecodeRecency(std::string_view bytes, int num_shards) {
  coding::Decoder in(bytes);
  uint32_t shards = 0;
  if (!in.GetFixed32(&shards)) return absl::DataLossError("recency marks: truncated shard count");
  if (shards != static_cast<uint32_t>(num_shards)) {
    return absl::DataLossError(
        absl::StrCat("recency marks of ", shards, " shards; the model has ", num_shards));
  }
  std::string_view rest = in.remaining();
  std::vector<RecencyMarks> out(shards);
  for (uint32_t s = 0; s < shards; ++s) {
    if (!out[s].ParseFrom(&rest)) {
      return absl::DataLossError(absl::StrCat("recency marks of shard ", s, " are damaged"));
    }
  }
  if (!rest.empty()) return absl::DataLossError("recency marks: trailing bytes");
  return out;
}

}  // namespace clickd
