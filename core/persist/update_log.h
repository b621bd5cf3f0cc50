// UpdateLog: the write-ahead log of one model's accepted updates. Every
// update is appended (and, per the sync mode, made durable) before it is
// acknowledged; a restart loads the newest snapshot and replays the records
// after the snapshot's sequence number.
//
// This is the seam between ModelJournal and where its records live. The
// embedded implementation, and ModelJournal's default, is FileUpdateLog
// (segment files on the local disk); MemoryUpdateLog keeps them in memory
// (tests, and callers that want journal semantics without a disk). The
// replicated log is not one: a replica applies one JetStream stream of every
// model's records and keeps its own snapshots (replication/replica.h,
// docs/replication.md). A journal opens its log through an UpdateLogOpener
// (JournalOptions::open_log).
//
// Sequence rules every implementation keeps: sequences are consecutive
// from 1; the log holds records first_sequence()..last_sequence() (none if
// first_sequence() == last_sequence() + 1); TruncateThrough only drops old
// records, ResetAfter only moves an empty log forward, and neither ever
// makes a sequence be handed out twice.
//
// Thread safety: implementations are safe for concurrent use.
#ifndef CLICKD_CORE_PERSIST_UPDATE_LOG_H_
#define CLICKD_CORE_PERSIST_UPDATE_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

class Env;

enum class SyncMode {
  kEveryRequest,  // WaitDurable syncs (group commit: one sync covers all waiters)
  kInterval,      // a background sync every interval; WaitDurable returns at once
  kNone,          // never synced by us; the OS writes back when it likes
};

// "every_request", "interval" or "none" (the --update_log_sync values).
absl::StatusOr<SyncMode> ParseSyncMode(std::string_view name);

struct UpdateLogOptions {
  SyncMode sync = SyncMode::kEveryRequest;
  std::chrono::milliseconds sync_interval{100};
  // If set, called with the seconds each sync took (FileUpdateLog: each
  // fdatasync of a segment; for the sync latency metric), from any thread
  // and sometimes with the log's lock held: it must be thread-safe, quick,
  // and not call into the log. A log that never syncs never calls it.
  std::function<void(double seconds)> on_sync;
  // kEveryRequest: how long a sync may wait to gather the records of
  // writers that took turns at the last sync, so that they share the next
  // one (FileUpdateLog::WaitDurable). Never longer than the last sync took;
  // a lone writer never waits. Zero: never wait.
  std::chrono::microseconds max_group_wait{2000};
};

// How opening a log treats damage. A log that cannot be damaged (memory)
// has nothing to apply them to.
struct LogRecoveryOptions {
  // The sequence of the snapshot the caller loaded (0: none loaded). The
  // log must start no later than the record after it; damage among records
  // it contains does not stop Open (the damaged segments are left for the
  // next TruncateThrough to remove). Unset: the caller has no snapshot to
  // check against, and the log may start anywhere.
  std::optional<uint64_t> snapshot_sequence;
  // The operator's recovery mode: keep every record before the first damage
  // that stops Open, move the damaged segment and every later one aside
  // (renamed to <name>.damaged-<unix seconds>), and continue.
  bool salvage_damaged = false;
};

// What opening a log found and repaired, for logs and metrics. File names
// are relative to the log directory's parent ("log/<first seq>.log").
struct UpdateLogRecovery {
  uint64_t records = 0;
  uint64_t torn_tail_bytes = 0;  // cut from the newest segment
  // Damage in segments the loaded snapshot covers, one message each.
  std::vector<std::string> covered_damage;
  // With salvage_damaged: the damage that stopped Open, as the DataLoss
  // message would have said it ("" if none), the first record dropped, the
  // highest one known to have existed (0 if unknown), and the files moved
  // aside.
  std::string salvaged_damage;
  uint64_t dropped_from = 0;
  uint64_t dropped_at_least_through = 0;
  std::vector<std::string> moved_aside;
  // Why the manifest could not be brought up to date at Open ("" if it
  // was, or already was): the one on disk stays, still true, so the log
  // opens anyway (issue 33, N6: a full disk must not stop every model).
  std::string manifest_kept;
};

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

  // Calls fn(sequence, record) for every record kept after `after`, in
  // sequence order, without the log's lock held; stops at fn's first error
  // and returns it.
  virtual absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) = 0;

  // Drops records up to `sequence`, which a durable snapshot now contains.
  // An implementation may keep some of them (FileUpdateLog drops whole
  // segments only), never a later one; last_sequence() does not change.
  virtual absl::Status TruncateThrough(uint64_t sequence) = 0;

  // Makes a log whose records all come before `sequence` + 1 continue after
  // `sequence` (first_sequence() == sequence + 1, last_sequence() ==
  // sequence), dropping the records it holds: for a model restored from a
  // snapshot whose log is gone (a backup of MODEL + snapshot) or was
  // salvaged short of it. FailedPrecondition if the log holds later records.
  virtual absl::Status ResetAfter(uint64_t sequence) = 0;

  // The sequence of the oldest record kept (last_sequence() + 1 if none).
  virtual uint64_t first_sequence() const = 0;
  // The sequence of the newest record appended (0 if none ever was).
  virtual uint64_t last_sequence() const = 0;
  // Bytes the log's records take where it keeps them (on disk for
  // FileUpdateLog).
  virtual uint64_t size_bytes() const = 0;
};

// Opens (or creates) the log kept under `dir` on `env`, filling `recovery`
// (if not null) with what it found. ModelJournal opens a model's log at
// <model dir>/log, with `how.snapshot_sequence` set to the snapshot it
// loaded (Create: unset, and a new model's log must be empty from sequence
// 1). FileUpdateLog::Open is one; MemoryUpdateLog::Opener() makes another.
using UpdateLogOpener = std::function<absl::StatusOr<std::unique_ptr<UpdateLog>>(
    Env* env, const std::string& dir, const UpdateLogOptions& options, UpdateLogRecovery* recovery,
    const LogRecoveryOptions& how)>;

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_UPDATE_LOG_H_
