// TTL eviction's bookkeeping (MemoryConfig.ttl_rounds; docs/memory.md,
// "TTL eviction"): which coordinates a model learned recently.
//
// Time is the model's round (examples learned), not the clock, so that
// replicas, replays and restarts evict the same coordinates. TtlSchedule
// cuts the rounds into epochs of ceil(ttl / 8) rounds; epoch e has the
// 4-bit code e mod 15 + 1 (0 means "never"). Every epoch each shard is
// swept once, at its own offset into the epoch so that the sweeps of a
// large model do not land on one step, and loses the coordinates not
// learned in the last 8 epochs and the current one.
//
// RecencyMarks is one shard's record. A stamp per coordinate would cost a
// byte or more per slot (an eighth of a compact slot, and a float slot has
// no spare byte). Instead a shard keeps 4-bit buckets, about one per
// coordinate (a power of two, at least as many as the coordinates): a
// learned key writes the epoch's code into the bucket its key hashes to.
// A key is recent while its bucket's code is at most 8 epochs old. A
// bucket shared with a key learned later keeps a stale key longer (until
// a sweep finds its bucket old), never shorter: no coordinate learned
// within the TTL is evicted, and one untouched for more than 1.25x the
// TTL is evicted unless its bucket is shared with a recent key, which
// happens at a sweep with probability below 1 - 1/e (a bucket per
// coordinate or more, all of them recent at worst).
//
// Thread safety: none; ShardedStore guards each shard's marks with the
// shard's lock.
#ifndef CLICKD_CORE_STORE_RECENCY_H_
#define CLICKD_CORE_STORE_RECENCY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace clickd {

class TtlSchedule {
 public:
  // A coordinate is evicted only after more than ttl_rounds rounds without
  // being learned, and, but for a shared bucket, within 10 epochs of its
  // last step's epoch: 1.25x ttl_rounds (+10 for the rounding up).
  static constexpr int kEpochsPerTtl = 8;

  // ttl_rounds 0: no TTL (every call below returns "nothing to do").
  TtlSchedule(uint64_t ttl_rounds, int num_shards);

  bool enabled() const { return epoch_rounds_ != 0; }
  uint64_t epoch_rounds() const { return epoch_rounds_; }

  // The code of the epoch of `round`: 1..15 (0 without a TTL).
  uint8_t CodeAt(uint64_t round) const;

  // Calls fn(shard) for each shard swept once the model has learned
  // `round` examples: the shards whose offset is round mod epoch_rounds.
  template <typename Fn>
  void ForEachDue(uint64_t round, Fn&& fn) const {
    if (!enabled() || round == 0) return;
    const uint64_t at = round % epoch_rounds_;
    for (size_t s = 0; s < offsets_.size(); ++s) {
      if (offsets_[s] == at) fn(static_cast<int>(s));
    }
  }

 private:
  uint64_t epoch_rounds_ = 0;
  std::vector<uint64_t> offsets_;  // per shard: s * epoch_rounds / num_shards
};

class RecencyMarks {
 public:
  static constexpr int kMinLog2Buckets = 6;
  static constexpr int kMaxLog2Buckets = 40;

  // kMinLog2Buckets buckets, all "never".
  RecencyMarks();

  // Writes `code` (CodeAt of the step's round) into `key`'s bucket; `key`
  // is a table's canonical key. First doubles the buckets while the shard
  // holds more `coordinates` than buckets (a new bucket takes its parent's
  // code: an old mark may only keep a key longer).
  void Mark(uint64_t key, uint8_t code, size_t coordinates);

  // Whether `key` was learned within the window ending in the epoch `now`.
  bool Recent(uint64_t key, uint8_t now) const { return Fresh(Get(Bucket(key)), now); }

  // After a sweep at `now`: buckets older than the window are cleared, and
  // the buckets are resized to the power of two at or above `coordinates`
  // (halving keeps the more recent code of each pair).
  void Refit(size_t coordinates, uint8_t now);

  uint64_t Bytes() const { return nibbles_.size(); }
  size_t buckets() const { return size_t{1} << log2_buckets_; }

  // One shard's marks: log2 of the bucket count (1 byte), then the packed
  // codes (two per byte).
  void AppendTo(std::string* out) const;
  // Reads what AppendTo wrote from the front of *in and advances it; false
  // if it is malformed.
  bool ParseFrom(std::string_view* in);

  bool operator==(const RecencyMarks&) const = default;

 private:
  static bool Fresh(uint8_t code, uint8_t now);
  size_t Bucket(uint64_t key) const {
    // A multiplicative hash other than the tables' own, top bits.
    return static_cast<size_t>((key * 0xD6E8FEB86659FD93ull) >> (64 - log2_buckets_));
  }
  uint8_t Get(size_t b) const { return (nibbles_[b >> 1] >> ((b & 1) * 4)) & 0xF; }
  void Set(size_t b, uint8_t code) {
    uint8_t& byte = nibbles_[b >> 1];
    const int shift = static_cast<int>(b & 1) * 4;
    byte = static_cast<uint8_t>((byte & ~(0xF << shift)) | (code << shift));
  }
  void Resize(int log2_buckets, uint8_t now);

  int log2_buckets_;
  std::vector<uint8_t> nibbles_;
};

// Every shard's marks as ShardedStore::EncodeRecency writes them (a 4-byte
// shard count, then each shard's AppendTo); an error naming what is wrong
// if the bytes are malformed or of another shard count.
absl::StatusOr<std::vector<RecencyMarks>> DecodeRecency(std::string_view bytes, int num_shards);

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_RECENCY_H_
