// MemoryUpdateLog: an UpdateLog that keeps its records in memory, with the
// sequence rules of update_log.h exactly as FileUpdateLog keeps them
// (consecutive from last_sequence() + 1, TruncateThrough never moves
// last_sequence(), ResetAfter only over a log without later records). For
// tests, and for a caller that wants a journal's semantics without a disk.
//
// Nothing survives the process: "durable" here means "kept as long as the
// records are", so WaitDurable returns at once in every sync mode and
// options.on_sync is never called. An append never fails, and there is no
// damage to recover from (LogRecoveryOptions change nothing; ModelJournal
// checks the log against its snapshot itself).
//
// Opener() makes an UpdateLogOpener (JournalOptions::open_log) that keeps
// each directory's records, so that a journal reopened on the same model
// directory (a restart within the process) finds them. Like the file log
// it creates the log's directory on the Env (empty: nothing is written
// into it), and a directory that has gone since (ModelJournal::Destroy)
// starts over with an empty log, so that a model created again under the
// same name does not inherit an earlier model's records.
//
// Thread safety: safe for concurrent use. Logs an opener opens on the same
// directory share their records.
#ifndef CLICKD_CORE_PERSIST_MEMORY_UPDATE_LOG_H_
#define CLICKD_CORE_PERSIST_MEMORY_UPDATE_LOG_H_

#include <memory>
#include <string>

#include "core/persist/update_log.h"

namespace clickd {

class MemoryUpdateLog final : public UpdateLog {
 public:
  // An empty log: the first Append gets sequence 1.
  MemoryUpdateLog();

  // Returns an opener whose logs live as long as the opener (any copy of
  // it) or a log it opened does.
  static UpdateLogOpener Opener();

  absl::StatusOr<uint64_t> Append(std::string_view record) override;
  absl::Status WaitDurable(uint64_t sequence) override;
  absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) override;
  // Drops exactly the records up to `sequence`.
  absl::Status TruncateThrough(uint64_t sequence) override;
  absl::Status ResetAfter(uint64_t sequence) override;
  uint64_t first_sequence() const override;
  uint64_t last_sequence() const override;
  // The records' payload bytes.
  uint64_t size_bytes() const override;

 private:
  struct Records;

  // `name` says which log in messages (the directory, for an opener's).
  MemoryUpdateLog(std::shared_ptr<Records> records, std::string name);

  const std::shared_ptr<Records> records_;
  const std::string name_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_MEMORY_UPDATE_LOG_H_
