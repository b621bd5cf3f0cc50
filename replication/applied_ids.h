// AppliedIds: the message ids of the records a replica applied within the
// log stream's duplicate window, by the time JetStream stored each record.
//
// JetStream refuses a second publish of a message id within its duplicate
// window, which is what makes a client's retry with the same
// idempotency_key safe. A server that loses that memory (seen with Debian's
// nats-server 2.9.10 under faults: docs/performance_replication.md) stores
// the retry again, and every replica would learn it twice. Replicas
// therefore also skip a record whose message id they applied within the
// window before, measured on the records' own stored times, so that every
// replica skips the same ones. The set travels in replica snapshots: a
// replica restored from one skips what the others skip.
//
// Encoding (core/base/coding.h): count:fixed32, then per id (oldest first)
// sequence:fixed64 unix_nanos:fixed64 id:string.
//
// Thread safety: externally synchronized (the applier, and a snapshot while
// the applier waits).
#ifndef CLICKD_REPLICATION_APPLIED_IDS_H_
#define CLICKD_REPLICATION_APPLIED_IDS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace clickd {

class AppliedIds {
 public:
  explicit AppliedIds(std::chrono::nanoseconds window = std::chrono::seconds(120))
      : window_(window) {}

  // The sequence `id` was first applied at, if within the window of
  // `unix_nanos` (the record being applied now).
  std::optional<uint64_t> Seen(std::string_view id, int64_t unix_nanos);
  // Remembers `id` applied at `sequence`, stored at `unix_nanos`.
  void Add(std::string_view id, uint64_t sequence, int64_t unix_nanos);

  size_t size() const { return by_id_.size(); }
  std::string Encode() const;
  // DataLoss naming what is wrong.
  static absl::StatusOr<AppliedIds> Decode(std::string_view bytes, std::chrono::nanoseconds window);

 private:
  struct Entry {
    std::string id;
    uint64_t sequence = 0;
    int64_t unix_nanos = 0;
  };
  // Forgets the ids stored more than the window before `unix_nanos`.
  void Expire(int64_t unix_nanos);

  std::chrono::nanoseconds window_;
  std::deque<Entry> order_;  // oldest first
  absl::flat_hash_map<std::string, uint64_t> by_id_;
};

}  // namespace clickd

#endif  // CLICKD_REPLICATION_APPLIED_IDS_H_
