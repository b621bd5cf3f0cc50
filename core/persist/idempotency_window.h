// IdempotencyWindow: the idempotency keys a model has learned under within
// a window of time, so that a retried Update or Feedback (the same key) is
// not learned twice (docs/api.md#idempotency).
//
// A keyed record in the update log carries its key and the time it was
// written (the writer's clock), and a replay inserts the key again at that
// time; the window's keys are in snapshots too. So a key acknowledged
// before a crash is still known after the restart, and a restart, like a
// replica, rebuilds the same window from the same records.
//
// Memory is bounded: a key is forgotten once it is older than the window,
// or, when max_keys are held, the oldest goes first (a retry arriving after
// that many newer keys would be learned again: docs/api.md says so).
//
// Source positions: a key made by PositionKey is not an idempotency key but
// the position of a stream the model learns from (a Kafka topic's
// partition: the offset of the next record to learn). It travels with the
// record it was committed with, exactly like a key (in the update log with
// the record, then in snapshots), but it is never forgotten: the window
// keeps the latest per topic and partition, and Position reads it. So the
// position a restart resumes at is exactly the one of the last record it
// restored (docs/kafka.md). A position key starts with a byte (0x1f) that
// no idempotency key of an RPC can hold.
//
// Thread safety: safe for concurrent use (one mutex). The caller serializes
// the check-then-insert of one request with its learning (the journal's
// learn lock).
#ifndef CLICKD_CORE_PERSIST_IDEMPOTENCY_WINDOW_H_
#define CLICKD_CORE_PERSIST_IDEMPOTENCY_WINDOW_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"

namespace clickd {

struct IdempotencyOptions {
  int64_t window_us = 600LL * 1'000'000;  // 10 minutes
  size_t max_keys = 100'000;
};

// Where a batch read from a source's partition stands: the partition's
// position before it (-1: none recorded yet) and the offset of the record
// after its last one.
struct SourcePosition {
  std::string topic;
  int32_t partition = 0;
  int64_t start = -1;
  int64_t next = 0;
  // Who read it, once: a retry of the same batch carries the same
  // attempt, a batch read again (or by another consumer) another one
  // (replicated message ids, Replica::LearnAt).
  std::string attempt;
};

class IdempotencyWindow {
 public:
  explicit IdempotencyWindow(const IdempotencyOptions& options) : options_(options) {}
  IdempotencyWindow(const IdempotencyWindow&) = delete;
  IdempotencyWindow& operator=(const IdempotencyWindow&) = delete;

  // Whether `key` was inserted within the window before `now_us`.
  bool Contains(std::string_view key, int64_t now_us) const;

  // Remembers `key` as seen at `now_us` (times that go backwards count as
  // the latest seen), forgetting keys past the window and, beyond
  // max_keys, the oldest.
  void Insert(std::string_view key, int64_t now_us);

  // Keys held plus source positions.
  size_t size() const;

  // The window's key for a Feedback's idempotency key `key`: Feedback keys
  // have a space of their own (a first byte, 0x1e, that no RPC's key can
  // hold), so that a Feedback reusing an Update's key is not taken for a
  // duplicate of it (issue 33, N15). The update log keeps the key as sent;
  // its record's kind says which space it belongs to. A PositionKey is
  // returned as it is: a feedback record carries its topic's position.
  static std::string FeedbackKey(std::string_view key);

  // The key that records `next_offset` as the position of `topic`'s
  // `partition` when inserted.
  static std::string PositionKey(std::string_view topic, int32_t partition, int64_t next_offset);
  // The latest position recorded for `topic`'s `partition`, or -1.
  int64_t Position(std::string_view topic, int32_t partition) const;
  // Whether `key` is a PositionKey; if so, its topic, partition and offset.
  static bool ParsePositionKey(std::string_view key, std::string* topic, int32_t* partition,
                               int64_t* next_offset);

  // Replaces everything held with what `bytes` (Encode) holds; DataLoss,
  // changing nothing, if it does not decode (a replica restoring a model
  // its registry created).
  absl::Status Restore(std::string_view bytes);

  // Every key with its time, for a snapshot; Decode checks every length and
  // the CRC and returns DataLoss naming what is wrong.
  std::string Encode() const;
  static absl::StatusOr<std::unique_ptr<IdempotencyWindow>> Decode(
      const IdempotencyOptions& options, std::string_view bytes);

 private:
  void ForgetOld(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a PositionKey's position; false if `key` is not one.
  bool SetPosition(std::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const IdempotencyOptions options_;
  mutable Mutex mu_;
  int64_t now_us_ ABSL_GUARDED_BY(mu_) = 0;
  // Oldest first; `keys_` holds the same keys with their times, for lookup.
  std::deque<std::pair<int64_t, std::string>> order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int64_t> keys_ ABSL_GUARDED_BY(mu_);
  // "<topic>\x1f<partition>" -> the next offset to learn.
  absl::flat_hash_map<std::string, int64_t> positions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_IDEMPOTENCY_WINDOW_H_
