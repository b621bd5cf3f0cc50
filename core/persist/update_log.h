// UpdateLog: the write-ahead log of one model's accepted updates. Every
// update is appended (and, per the sync mode, made durable) before it is
// acknowledged; a restart loads the newest snapshot and replays the records
// after the snapshot's sequence number.
//
// This is an interface so that a replicated log (NATS JetStream: every
// replica consumes the same ordered stream) can implement it later; the
// embedded implementation is FileUpdateLog.
//
// Thread safety: implementations are safe for concurrent use.
#ifndef CLICKD_CORE_PERSIST_UPDATE_LOG_H_
#define CLICKD_CORE_PERSIST_UPDATE_LOG_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

enum class SyncMode {
  kEveryRequest,  // WaitDurable syncs (group commit: one sync covers all waiters)
  kInterval,      // a background sync every interval; WaitDurable returns at once
  kNone,          // never synced by us; the OS writes back when it likes
};

// "every_request", "interval" or "none" (the --update_log_sync values).
absl::StatusOr<SyncMode> ParseSyncMode(std::string_view name);

class UpdateLog {
 public:
  virtual ~UpdateLog() = default;

  // Appends one record and returns its sequence number (consecutive, from
  // last_sequence() + 1). Fails (Unavailable for a full disk) without
  // leaving a partial record that a reader would accept.
  virtual absl::StatusOr<uint64_t> Append(std::string_view record) = 0;

  // Returns once every record up to `sequence` is as durable as the sync
  // mode promises.
  virtual absl::Status WaitDurable(uint64_t sequence) = 0;

  // Calls fn(sequence, record) for every record after `after`, in order.
  virtual absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) = 0;

  // Drops records up to `sequence`, which a durable snapshot now contains.
  virtual absl::Status TruncateThrough(uint64_t sequence) = 0;

  virtual uint64_t last_sequence() const = 0;
  // Bytes the log holds on disk.
  virtual uint64_t size_bytes() const = 0;
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_UPDATE_LOG_H_
