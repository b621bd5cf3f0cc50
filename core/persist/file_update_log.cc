#include "core/persist/file_update_log.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/persist/coding.h"
#include "core/persist/crc32c.h"

namespace clickd {
namespace {

constexpr size_t kRecordHeader = 4 + 4 + 8;
constexpr uint32_t kMaxRecordBytes = 256u << 20;
constexpr std::string_view kSuffix = ".log";

uint32_t RecordCrc(std::string_view body) {
  return crc32c::Mask(crc32c::Value(body.data(), body.size()));
}

std::string EncodeRecord(uint64_t sequence, std::string_view payload) {
  std::string body;
  coding::PutFixed32(&body, static_cast<uint32_t>(payload.size()));
  coding::PutFixed64(&body, sequence);
  body.append(payload.data(), payload.size());
  std::string record;
  coding::PutFixed32(&record, RecordCrc(body));
  return record + body;
}

// Segment names are the zero-padded first sequence, so they sort in order.
bool ParseSegmentName(const std::string& name, uint64_t* first) {
  if (name.size() != 20 + kSuffix.size() || name.substr(20) != kSuffix) return false;
  return absl::SimpleAtoi(name.substr(0, 20), first);
}

absl::Status Unavailable(const absl::Status& cause, std::string_view what) {
  return absl::UnavailableError(absl::StrCat(std::string(what), ": ", cause.message()));
}

}  // namespace

absl::StatusOr<SyncMode> ParseSyncMode(std::string_view name) {
  if (name == "every_request") return SyncMode::kEveryRequest;
  if (name == "interval") return SyncMode::kInterval;
  if (name == "none") return SyncMode::kNone;
  return absl::InvalidArgumentError(absl::StrCat("update_log_sync \"", std::string(name),
                                                 "\" is not every_request, interval or none"));
}

size_t FileUpdateLog::ParseSegment(
    std::string_view bytes,
    const std::function<void(uint64_t sequence, std::string_view payload)>& record) {
  size_t whole = 0;
  coding::Decoder in(bytes);
  for (;;) {
    uint32_t crc = 0, length = 0;
    uint64_t sequence = 0;
    std::string_view payload;
    const std::string_view start = in.remaining();
    if (!in.GetFixed32(&crc) || !in.GetFixed32(&length) || length > kMaxRecordBytes ||
        !in.GetFixed64(&sequence) || !in.GetBytes(length, &payload)) {
      return whole;
    }
    if (RecordCrc(start.substr(4, kRecordHeader - 4 + length)) != crc) return whole;
    record(sequence, payload);
    whole += kRecordHeader + length;
  }
}

FileUpdateLog::FileUpdateLog(Env* env, std::string dir, UpdateLogOptions options)
    : env_(env), dir_(std::move(dir)), options_(options) {}

FileUpdateLog::~FileUpdateLog() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  synced_cv_.SignalAll();
  if (syncer_.joinable()) syncer_.join();
  MutexLock lock(&mu_);
  if (active_ != nullptr) {
    if (options_.sync != SyncMode::kNone) (void)active_->Sync();
    (void)active_->Close();
  }
}

std::string FileUpdateLog::SegmentPath(uint64_t first_sequence) const {
  return absl::StrFormat("%s/%020d%s", dir_, first_sequence, std::string(kSuffix));
}

absl::StatusOr<std::unique_ptr<FileUpdateLog>> FileUpdateLog::Open(Env* env, const std::string& dir,
                                                                   UpdateLogOptions options,
                                                                   UpdateLogRecovery* recovery) {
  if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
  auto names = env->ListDir(dir);
  if (!names.ok()) return names.status();
  std::vector<uint64_t> firsts;
  for (const std::string& name : *names) {
    uint64_t first;
    if (ParseSegmentName(name, &first)) firsts.push_back(first);
  }
  std::sort(firsts.begin(), firsts.end());
  std::unique_ptr<FileUpdateLog> log(new FileUpdateLog(env, dir, options));
  MutexLock lock(&log->mu_);
  UpdateLogRecovery found;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const std::string path = log->SegmentPath(firsts[i]);
    auto bytes = ReadWholeFile(env, path);
    if (!bytes.ok()) return bytes.status();
    uint64_t expected = firsts[i], last = firsts[i] - 1;
    bool out_of_order = false;
    const size_t whole = ParseSegment(*bytes, [&](uint64_t sequence, std::string_view) {
      out_of_order |= sequence != expected;
      last = sequence;
      ++expected;
      ++found.records;
    });
    if (out_of_order) return absl::DataLossError(path + ": records out of sequence");
    if (whole < bytes->size()) {
      if (i + 1 < firsts.size()) {
        return absl::DataLossError(absl::StrCat(path, ": damaged record at byte ", whole,
                                                " of a segment that is not the newest"));
      }
      // A crash mid-append: keep the whole records, cut the rest.
      found.torn_tail_bytes = bytes->size() - whole;
      if (absl::Status s = env->TruncateFile(path, whole); !s.ok()) return s;
    }
    if (!log->segments_.empty() && firsts[i] != log->segments_.back().last_sequence + 1) {
      return absl::DataLossError(
          absl::StrCat(path, ": a gap in the log before sequence ", firsts[i]));
    }
    log->segments_.push_back({firsts[i], last, whole});
    log->last_sequence_ = last;
  }
  if (log->segments_.empty()) {
    if (absl::Status s = log->StartSegment(1); !s.ok()) return s;
  } else {
    auto file = env->NewWritableFile(log->SegmentPath(log->segments_.back().first_sequence),
                                     /*append=*/true);
    if (!file.ok()) return file.status();
    log->active_ = *std::move(file);
  }
  // What survived a restart is as durable as it will get.
  log->synced_sequence_ = log->last_sequence_;
  if (recovery != nullptr) *recovery = found;
  if (options.sync == SyncMode::kInterval) {
    log->syncer_ = std::thread([raw = log.get()] { raw->SyncLoop(); });
  }
  return log;
}

absl::Status FileUpdateLog::StartSegment(uint64_t first_sequence) {
  if (active_ != nullptr) {
    if (absl::Status s = TimedSync(active_.get()); !s.ok()) return s;
    if (absl::Status s = active_->Close(); !s.ok()) return s;
    synced_sequence_ = last_sequence_;
  }
  // Always O_APPEND: after cutting off a failed append's partial record,
  // the next write must land at the new end, not at the old offset.
  const std::string path = SegmentPath(first_sequence);
  if (env_->FileExists(path)) {
    if (absl::Status s = env_->TruncateFile(path, 0); !s.ok()) return s;
  }
  auto file = env_->NewWritableFile(path, /*append=*/true);
  if (!file.ok()) return file.status();
  active_ = *std::move(file);
  segments_.push_back({first_sequence, first_sequence - 1, 0});
  return env_->SyncDir(dir_);
}

absl::StatusOr<uint64_t> FileUpdateLog::Append(std::string_view payload) {
  MutexLock lock(&mu_);
  if (!sync_failure_.ok())
    return Unavailable(sync_failure_, "the update log failed to sync earlier");
  const uint64_t sequence = last_sequence_ + 1;
  const std::string record = EncodeRecord(sequence, payload);
  Segment& segment = segments_.back();
  if (absl::Status s = active_->Append(record); !s.ok()) {
    // Cut off whatever prefix reached the file, so that the log stays whole.
    (void)env_->TruncateFile(SegmentPath(segment.first_sequence), segment.bytes);
    return Unavailable(s, "cannot append to the update log");
  }
  segment.bytes += record.size();
  segment.last_sequence = sequence;
  last_sequence_ = sequence;
  return sequence;
}

absl::Status FileUpdateLog::WaitDurable(uint64_t sequence) {
  if (options_.sync != SyncMode::kEveryRequest) return absl::OkStatus();
  // Group commit: one caller at a time syncs, with the lock released so
  // that others keep appending meanwhile; callers queued behind it find
  // their record synced, or sync everything appended since in one go.
  mu_.Lock();
  while (synced_sequence_ < sequence && sync_failure_.ok() && syncing_) synced_cv_.Wait(&mu_);
  if (synced_sequence_ >= sequence || !sync_failure_.ok()) {
    const absl::Status failure = sync_failure_;
    const bool durable = synced_sequence_ >= sequence;
    mu_.Unlock();
    if (durable) return absl::OkStatus();
    return Unavailable(failure, "the update log failed to sync");
  }
  syncing_ = true;  // TruncateThrough waits, so `file` outlives the sync
  const uint64_t target = last_sequence_;
  WritableFile* file = active_.get();
  mu_.Unlock();
  const absl::Status status = TimedSync(file);
  mu_.Lock();
  syncing_ = false;
  if (status.ok()) {
    synced_sequence_ = std::max(synced_sequence_, target);
  } else {
    sync_failure_ = status;
  }
  synced_cv_.SignalAll();
  mu_.Unlock();
  if (!status.ok()) return Unavailable(status, "the update log failed to sync");
  return absl::OkStatus();
}

absl::Status FileUpdateLog::TimedSync(WritableFile* file) {
  const uint64_t start = env_->NowMicros();
  absl::Status s = file->Sync();
  if (options_.on_sync) options_.on_sync(static_cast<double>(env_->NowMicros() - start) * 1e-6);
  return s;
}

void FileUpdateLog::SyncLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    synced_cv_.WaitFor(&mu_, options_.sync_interval);
    if (stopping_ || synced_sequence_ >= last_sequence_ || !sync_failure_.ok()) continue;
    const uint64_t target = last_sequence_;
    if (absl::Status s = TimedSync(active_.get()); !s.ok()) {
      sync_failure_ = s;
    } else {
      synced_sequence_ = target;
    }
  }
}

absl::Status FileUpdateLog::ReadAfter(
    uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) {
  std::vector<Segment> segments;
  {
    MutexLock lock(&mu_);
    segments = segments_;
  }
  for (const Segment& segment : segments) {
    if (segment.last_sequence <= after) continue;
    auto bytes = ReadWholeFile(env_, SegmentPath(segment.first_sequence));
    if (!bytes.ok()) return bytes.status();
    absl::Status status;
    ParseSegment(std::string_view(*bytes).substr(0, segment.bytes),
                 [&](uint64_t sequence, std::string_view payload) {
                   if (status.ok() && sequence > after) status = fn(sequence, payload);
                 });
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status FileUpdateLog::TruncateThrough(uint64_t sequence) {
  MutexLock lock(&mu_);
  // A WaitDurable syncing the active segment without the lock still uses
  // it; wait before reading last_sequence_, which appends move meanwhile.
  while (syncing_) synced_cv_.Wait(&mu_);
  // Roll to a fresh segment so that every older segment can go whole.
  if (segments_.back().bytes > 0) {
    if (absl::Status s = StartSegment(last_sequence_ + 1); !s.ok()) return s;
  }
  while (segments_.size() > 1 && segments_.front().last_sequence <= sequence) {
    if (absl::Status s = env_->RemoveFile(SegmentPath(segments_.front().first_sequence)); !s.ok()) {
      return s;
    }
    segments_.erase(segments_.begin());
  }
  return env_->SyncDir(dir_);
}

absl::Status FileUpdateLog::ResetAfter(uint64_t sequence) {
  MutexLock lock(&mu_);
  while (syncing_) synced_cv_.Wait(&mu_);
  if (last_sequence_ >= segments_.front().first_sequence) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir_, " holds records; only an empty log can start over"));
  }
  if (absl::Status s = StartSegment(sequence + 1); !s.ok()) return s;
  while (segments_.size() > 1) {
    if (absl::Status s = env_->RemoveFile(SegmentPath(segments_.front().first_sequence)); !s.ok()) {
      return s;
    }
    segments_.erase(segments_.begin());
  }
  last_sequence_ = sequence;
  synced_sequence_ = sequence;
  return env_->SyncDir(dir_);
}

uint64_t FileUpdateLog::first_sequence() const {
  MutexLock lock(&mu_);
  return segments_.front().first_sequence;
}

uint64_t FileUpdateLog::last_sequence() const {
  MutexLock lock(&mu_);
  return last_sequence_;
}

uint64_t FileUpdateLog::size_bytes() const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const Segment& s : segments_) total += s.bytes;
  return total;
}

}  // namespace clickd
