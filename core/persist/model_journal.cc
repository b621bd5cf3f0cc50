#include "core/persist/model_journal.h"

#include <algorithm>
#include <chrono>
#include <new>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/call_deadline.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"
#include "core/persist/batch_codec.h"
#include "core/persist/file_update_log.h"
#include "core/persist/logged_record.h"
#include "core/persist/snapshot.h"

namespace clickd {
namespace {

constexpr std::string_view kModelFile = "MODEL";
constexpr std::string_view kSnapshotPrefix = "snapshot-";
constexpr std::string_view kSnapshotSuffix = ".snap";

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string SnapshotName(uint64_t sequence) {
  return absl::StrFormat("%s%020d%s", std::string(kSnapshotPrefix), sequence,
                         std::string(kSnapshotSuffix));
}

// Sequences of the snapshots in `dir`, newest first.
absl::StatusOr<std::vector<uint64_t>> ListSnapshots(Env* env, const std::string& dir) {
  auto names = env->ListDir(dir);
  if (!names.ok()) return names.status();
  std::vector<uint64_t> sequences;
  for (const std::string& name : *names) {
    const size_t digits = name.size() - kSnapshotPrefix.size() - kSnapshotSuffix.size();
    uint64_t sequence;
    if (name.size() == kSnapshotPrefix.size() + 20 + kSnapshotSuffix.size() &&
        name.rfind(kSnapshotPrefix, 0) == 0 &&
        name.substr(name.size() - kSnapshotSuffix.size()) == kSnapshotSuffix &&
        absl::SimpleAtoi(name.substr(kSnapshotPrefix.size(), digits), &sequence)) {
      sequences.push_back(sequence);
    }
  }
  std::sort(sequences.rbegin(), sequences.rend());
  return sequences;
}

absl::Status WriteModelFile(Env* env, const std::string& dir, const ModelConfig& config) {
  std::string payload;
  EncodeModelConfig(config, &payload);
  std::string file;
  coding::PutFixed32(&file, crc32c::Mask(crc32c::Value(payload.data(), payload.size())));
  file += payload;
  return WriteFileAtomically(env, dir + "/" + std::string(kModelFile),
                             [&file](WritableFile* f) { return f->Append(file); });
}

absl::StatusOr<ModelConfig> ReadModelFile(Env* env, const std::string& dir) {
  const std::string path = dir + "/" + std::string(kModelFile);
  auto bytes = ReadWholeFile(env, path);
  if (!bytes.ok()) return bytes.status();
  coding::Decoder in(*bytes);
  uint32_t crc = 0;
  if (!in.GetFixed32(&crc) ||
      crc32c::Unmask(crc) != crc32c::Value(in.remaining().data(), in.remaining().size())) {
    return absl::DataLossError(path + ": checksum mismatch");
  }
  auto config = DecodeModelConfig(in.remaining());
  if (!config.ok())
    return absl::DataLossError(path + ": " + std::string(config.status().message()));
  return config;
}

absl::Status Closed(const std::string& dir) {
  return absl::FailedPreconditionError(absl::StrCat("the model stored in ", dir, " was deleted"));
}

// Opens the model's log at `dir`/log with options.open_log, or the
// embedded file log if it is unset.
absl::StatusOr<std::unique_ptr<UpdateLog>> OpenLog(const std::string& dir,
                                                   const JournalOptions& options,
                                                   UpdateLogRecovery* recovery,
                                                   const LogRecoveryOptions& how) {
  const UpdateLogOpener& open =
      options.open_log ? options.open_log : UpdateLogOpener(&FileUpdateLog::Open);
  return open(options.env, dir + "/log", options.log, recovery, how);
}

// The log must hold every record after the snapshot: it starts no later than
// snapshot + 1 (FileUpdateLog::Open checks this itself, naming the segment;
// this holds every UpdateLog to it). A log that ends before the snapshot
// starts over after it: an empty one (a model restored from a backup of
// MODEL + snapshot), or one salvaged short of it.
absl::Status CheckLogContinuesSnapshot(const std::string& dir, UpdateLog& log, bool salvaged,
                                       RecoveryReport* report) {
  const uint64_t snapshot = report->snapshot_sequence;
  const uint64_t first = log.first_sequence();
  if (first > snapshot + 1) {
    return absl::DataLossError(absl::StrCat(
        dir, ": the update log starts at record ", first, " but ",
        snapshot == 0 ? std::string("no snapshot reads back")
                      : absl::StrCat("the newest readable snapshot ends at record ", snapshot),
        ": records ", snapshot + 1, "..", first - 1, " are missing"));
  }
  const bool empty = log.last_sequence() < first;
  if ((empty || salvaged) && log.last_sequence() < snapshot) {
    report->log_restarted = true;
    return log.ResetAfter(snapshot);
  }
  return absl::OkStatus();
}

}  // namespace

ModelJournal::ModelJournal(std::string dir, JournalOptions options, std::unique_ptr<UpdateLog> log,
                           uint64_t snapshot_sequence)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      log_(std::move(log)),
      snapshot_sequence_(snapshot_sequence) {}

absl::StatusOr<std::unique_ptr<ModelJournal>> ModelJournal::Create(const std::string& dir,
                                                                   const ModelConfig& config,
                                                                   const JournalOptions& options) {
  Env* env = options.env;
  if (env->FileExists(dir + "/" + std::string(kModelFile))) {
    return absl::AlreadyExistsError(absl::StrCat(dir, " already holds a model"));
  }
  if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
  // A stale log from a model deleted half-way would be replayed into this
  // one: start from an empty directory.
  if (absl::Status s = Destroy(env, dir); !s.ok()) return s;
  if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
  auto log = OpenLog(dir, options, nullptr, {});
  absl::Status status = log.status();
  if (status.ok()) {
    // Records there would be replayed into the new model. (Destroy has just
    // removed a file log; an opener keeping records elsewhere must not hand
    // back an earlier model's.)
    const uint64_t first = (*log)->first_sequence(), last = (*log)->last_sequence();
    if (first != 1 || last != 0) {
      status = absl::FailedPreconditionError(absl::StrCat(
          dir, ": a new model needs an empty update log that starts at record 1, not one ",
          last < first ? absl::StrCat("that continues after record ", last)
                       : absl::StrCat("holding records ", first, "..", last)));
    }
  }
  // MODEL last: a directory without it is an unfinished create.
  if (status.ok()) status = WriteModelFile(env, dir, config);
  if (!status.ok()) {
    // An unfinished create leaves no directory behind (a full disk; a
    // start that fails then removes the models it made: issue 33, N16).
    if (log.ok()) log->reset();
    (void)Destroy(env, dir);
    return status;
  }
  return std::unique_ptr<ModelJournal>(new ModelJournal(dir, options, *std::move(log), 0));
}

namespace {

// The steps of ModelJournal::Open, in order.

// Loads the newest snapshot of `dir` that reads back and matches its name
// into *model, noting it (or nothing) in *report, and each newer snapshot
// that was rejected, with its reason.
absl::Status LoadNewestSnapshot(Env* env, const std::string& dir, Model* model,
                                std::unique_ptr<FeedbackLoop>* loop,
                                std::unique_ptr<IdempotencyWindow>* window,
                                const IdempotencyOptions& window_options, std::string* calibration,
                                RecoveryReport* report) {
  auto snapshots = ListSnapshots(env, dir);
  if (!snapshots.ok()) return snapshots.status();
  for (uint64_t sequence : *snapshots) {
    const std::string path = dir + "/" + SnapshotName(sequence);
    auto contents = ReadSnapshot(env, path);
    if (contents.ok() && contents->log_sequence != sequence) {
      contents = absl::DataLossError(path + ": its sequence differs from its name");
    }
    absl::Status status = contents.status();
    if (status.ok() && contents->config.feedback.enabled() != (*loop != nullptr)) {
      status = absl::DataLossError(
          path + ": its impression-to-click loop does not match the model's config");
    }
    // The loop into a fresh one first, kept only if the model's state loads
    // too: a refused snapshot leaves both as they were for the next one.
    std::unique_ptr<FeedbackLoop> restored;
    if (status.ok() && *loop != nullptr) {
      restored = std::make_unique<FeedbackLoop>(contents->config);
      status = restored->RestoreState(contents->feedback);
    }
    std::unique_ptr<IdempotencyWindow> keys;
    if (status.ok() && !contents->idempotency.empty()) {
      auto decoded = IdempotencyWindow::Decode(window_options, contents->idempotency);
      status = decoded.status();
      if (decoded.ok()) keys = *std::move(decoded);
    }
    if (status.ok()) status = model->ImportState(contents->state);
    if (status.ok() && restored != nullptr) *loop = std::move(restored);
    if (status.ok() && keys != nullptr) *window = std::move(keys);
    if (status.ok()) *calibration = std::move(contents->calibration);
    if (status.ok()) {
      report->snapshot_sequence = sequence;
      report->snapshot_unix_seconds = env->FileModifiedSeconds(path).value_or(0);
      report->snapshot_bytes = env->FileSize(path).value_or(0);
      break;
    }
    report->rejected_snapshots.push_back(std::string(status.message()));
  }
  return absl::OkStatus();
}

// Copies what opening the update log found into the recovery report.
void ReportLogRecovery(const UpdateLogRecovery& recovery, RecoveryReport* report) {
  report->torn_tail_bytes = recovery.torn_tail_bytes;
  report->covered_log_damage = recovery.covered_damage;
  report->salvaged_log_damage = recovery.salvaged_damage;
  report->dropped_from = recovery.dropped_from;
  report->dropped_at_least_through = recovery.dropped_at_least_through;
  report->moved_aside = recovery.moved_aside;
  report->manifest_kept = recovery.manifest_kept;
}

// Replays the records of `log` after the snapshot into *model, counting
// them in *report, and checks that the log reaches the snapshot.
absl::Status ReplayLog(const std::string& dir, UpdateLog& log, Model* model, FeedbackLoop* loop,
                       IdempotencyWindow* window, RecoveryReport* report) {
  absl::Status replay = log.ReadAfter(
      report->snapshot_sequence, [&](uint64_t, std::string_view record) -> absl::Status {
        auto applied = ApplyLoggedRecord(record, *model, loop, window);
        if (!applied.ok()) return applied.status();
        ++report->replayed_records;
        return absl::OkStatus();
      });
  if (!replay.ok()) return replay;
  if (log.last_sequence() < report->snapshot_sequence) {
    return absl::DataLossError(absl::StrCat(dir, ": the log ends at ", log.last_sequence(),
                                            " before the snapshot's sequence ",
                                            report->snapshot_sequence));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ModelJournal::ReadConfig(Env* env, const std::string& dir) {
  return ReadModelFile(env, dir);
}

absl::StatusOr<ModelJournal::Opened> ModelJournal::Open(const std::string& dir,
                                                        const JournalOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Env* env = options.env;
  Opened out;
  auto config = ReadModelFile(env, dir);
  if (!config.ok()) return config.status();
  auto model = CreateModel(*config);
  if (!model.ok()) return model.status();
  out.model = *std::move(model);
  if (config->feedback.enabled()) out.feedback = std::make_unique<FeedbackLoop>(*config);
  out.idempotency = std::make_unique<IdempotencyWindow>(options.idempotency);
  if (absl::Status s =
          LoadNewestSnapshot(env, dir, out.model.get(), &out.feedback, &out.idempotency,
                             options.idempotency, &out.calibration, &out.report);
      !s.ok()) {
    return s;
  }

  UpdateLogRecovery recovery;
  LogRecoveryOptions how;
  how.snapshot_sequence = out.report.snapshot_sequence;
  how.salvage_damaged = options.salvage_damaged_log;
  auto log = OpenLog(dir, options, &recovery, how);
  if (!log.ok()) return log.status();
  ReportLogRecovery(recovery, &out.report);
  if (absl::Status s =
          CheckLogContinuesSnapshot(dir, **log, !recovery.salvaged_damage.empty(), &out.report);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReplayLog(dir, **log, out.model.get(), out.feedback.get(),
                                 out.idempotency.get(), &out.report);
      !s.ok()) {
    return s;
  }
  out.journal.reset(new ModelJournal(dir, options, *std::move(log), out.report.snapshot_sequence));
  out.report.seconds = SecondsSince(start);
  return out;
}

absl::StatusOr<std::vector<ScoredExample>> ModelJournal::Learn(
    Model& model, absl::Span<const TrainingExample> batch) {
  // Encoded and hashed before the learn lock: only the log's order and the
  // steps need it.
  std::string record;
  EncodeBatch(batch, &record);
  thread_local HashedBatch hashed;
  HashBatch(model, batch, &hashed);
  std::vector<ScoredExample> scored;
  const absl::Status committed = Commit(
      [&]() -> absl::StatusOr<std::string> {
        // What learning the batch allocates, before it is logged: a batch
        // the memory cannot take is refused here (std::bad_alloc, the
        // caller's RESOURCE_EXHAUSTED) and is not in the log, so a restart
        // does not learn it either.
        model.ReserveFor(hashed.features);
        return std::move(record);
      },
      [&] { scored = LearnHashedBatch(model, batch, hashed); });
  ReleaseIfLarge(&hashed);
  if (!committed.ok()) return committed;
  return scored;
}

absl::Status ModelJournal::Writable() const {
  if (closed_) return Closed(dir_);
  if (broken_sequence_ != 0) {
    return absl::UnavailableError(absl::StrCat(
        "model stored in ", dir_, " ran out of memory learning its logged record ",
        broken_sequence_,
        ": it takes no updates and no snapshots until clickd restarts and learns its log"));
  }
  return absl::OkStatus();
}

absl::Status ModelJournal::Broken(uint64_t sequence) {
  // The record is in the log and partly learned: the model no longer
  // matches its log, so it must not change or be snapshotted again; a
  // restart learns the log whole. Only an allocation ReserveFor cannot
  // foresee gets here (docs/limits.md, "Out of memory").
  broken_sequence_ = sequence;
  return absl::UnavailableError(
      absl::StrCat("out of memory learning an update of the model stored in ", dir_,
                   " after it was logged (record ", sequence,
                   "): it is learned when clickd restarts; until then the model takes no updates"));
}

absl::Status ModelJournal::Commit(absl::FunctionRef<absl::StatusOr<std::string>()> prepare,
                                  absl::FunctionRef<void()> apply) {
  uint64_t sequence = 0;
  {
    MutexLock lock(&learn_mu_);
    if (absl::Status s = Writable(); !s.ok()) return s;
    // Held behind another learner past the call's deadline: refused whole,
    // before it is logged (core/base/call_deadline.h).
    if (absl::Status s = CallDeadline::Check(); !s.ok()) return s;
    absl::StatusOr<std::string> record = prepare();
    if (!record.ok()) return record.status();
    auto appended = log_->Append(*record);
    if (!appended.ok()) return appended.status();
    sequence = *appended;
    try {
      apply();
    } catch (const std::bad_alloc&) {
      return Broken(sequence);
    }
    MutexLock syncing(&syncing_mu_);
    ++syncing_;
  }
  const absl::Status durable = log_->WaitDurable(sequence);
  {
    MutexLock syncing(&syncing_mu_);
    if (--syncing_ == 0) syncing_done_.SignalAll();
  }
  return durable;
}

absl::StatusOr<SnapshotReport> ModelJournal::Snapshot(const Model& model,
                                                      const FeedbackLoop* feedback,
                                                      const IdempotencyWindow* idempotency,
                                                      std::string calibration,
                                                      BackgroundThread* background) {
  MutexLock one_at_a_time(&snapshot_mu_);
  const auto start = std::chrono::steady_clock::now();
  SnapshotContents contents;
  contents.config = model.config();
  contents.calibration = std::move(calibration);
  std::unique_ptr<Model::StateCopy> copy;
  {
    MutexLock lock(&learn_mu_);
    if (absl::Status s = Writable(); !s.ok()) return s;
    contents.log_sequence = log_->last_sequence();
    copy = model.BeginStateCopy();
    // The join buffer is copied whole under the lock: it is bounded by its
    // budget (docs/feedback.md says what that costs).
    if (feedback != nullptr) contents.feedback = feedback->EncodeState();
    if (idempotency != nullptr && idempotency->size() > 0) {
      contents.idempotency = idempotency->Encode();
    }
  }
  SnapshotReport report;
  report.pause_seconds = SecondsSince(start);
  // Learners go on meanwhile; the copy is still the state at log_sequence.
  // The shards are read at the caller's priority, the rest at background's.
  copy->ReadShards();
  report.path = dir_ + "/" + SnapshotName(contents.log_sequence);
  Env* env = options_.env;
  absl::Status written;
  auto encode_and_write = [&] {
    contents.state = copy->Finish();
    copy.reset();
    written = WriteSnapshot(env, report.path, contents);
  };
  if (background != nullptr) {
    background->Run(encode_and_write);
  } else {
    encode_and_write();
  }
  if (!written.ok()) return written;
  report.sequence = contents.log_sequence;
  report.coordinates =
      contents.state.coordinates.size() / (sizeof(uint64_t) + contents.state.state_size);
  auto size = env->FileSize(report.path);
  report.bytes = size.ok() ? *size : 0;
  snapshot_sequence_ = contents.log_sequence;

  // Keep the newest K snapshots and the log the oldest of them needs.
  auto snapshots = ListSnapshots(env, dir_);
  if (!snapshots.ok()) return snapshots.status();
  const size_t keep = static_cast<size_t>(std::max(1, options_.keep_snapshots));
  for (size_t i = keep; i < snapshots->size(); ++i) {
    if (absl::Status s = env->RemoveFile(dir_ + "/" + SnapshotName((*snapshots)[i])); !s.ok()) {
      return s;
    }
  }
  const uint64_t oldest_kept = (*snapshots)[std::min(keep, snapshots->size()) - 1];
  if (absl::Status s = log_->TruncateThrough(oldest_kept); !s.ok()) return s;
  report.seconds = SecondsSince(start);
  return report;
}

void ModelJournal::Close() {
  // Waits for a snapshot in flight, which writes outside the learn lock.
  MutexLock one_at_a_time(&snapshot_mu_);
  {
    MutexLock lock(&learn_mu_);
    closed_ = true;
  }
  // No learner counts itself in now; wait for those syncing.
  MutexLock syncing(&syncing_mu_);
  while (syncing_ > 0) syncing_done_.Wait(&syncing_mu_);
}

uint64_t ModelJournal::records_since_snapshot() const {
  MutexLock lock(&snapshot_mu_);
  return log_->last_sequence() - snapshot_sequence_;
}

namespace {

// Removes `path` and, if it is a directory, everything below it.
absl::Status RemoveTree(Env* env, const std::string& path) {
  auto names = env->ListDir(path);
  if (!names.ok()) return env->RemoveFile(path);  // not a directory
  for (const std::string& name : *names) {
    if (absl::Status s = RemoveTree(env, path + "/" + name); !s.ok()) return s;
  }
  return env->RemoveDir(path);
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

absl::Status ModelJournal::Destroy(Env* env, const std::string& dir) {
  if (!env->FileExists(dir)) return absl::OkStatus();
  // One rename takes the model out of the data directory atomically: a
  // crash before it leaves the whole model, after it a tombstone that the
  // next Recover finishes removing (RemoveTombstones).
  const std::string parent = ParentDir(dir);
  const std::string tombstone = absl::StrCat(parent, "/", kTombstonePrefix,
                                             dir.substr(parent.size() + 1), "-", env->NowMicros());
  if (absl::Status s = env->RenameFile(dir, tombstone); !s.ok()) return s;
  if (absl::Status s = env->SyncDir(parent); !s.ok()) return s;
  return RemoveTree(env, tombstone);
}

absl::Status ModelJournal::RemoveTombstones(Env* env, const std::string& models_dir) {
  auto names = env->ListDir(models_dir);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    if (!absl::StartsWith(name, kTombstonePrefix)) continue;
    if (absl::Status s = RemoveTree(env, models_dir + "/" + name); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace clickd
