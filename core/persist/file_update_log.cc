#include "core/persist/file_update_log.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {
namespace {

constexpr size_t kRecordHeader = 4 + 4 + 8;
constexpr std::string_view kSuffix = ".log";

uint32_t RecordCrc(std::string_view body) {
  return crc32c::Mask(crc32c::Value(body.data(), body.size()));
}

// Runs under the journal's learn lock: the payload is copied once, and its
// CRC extends the header's instead of being taken over a copy of both.
std::string EncodeRecord(uint64_t sequence, std::string_view payload) {
  std::string header;  // length | sequence: what the CRC covers before the payload
  coding::PutFixed32(&header, static_cast<uint32_t>(payload.size()));
  coding::PutFixed64(&header, sequence);
  const uint32_t crc =
      crc32c::Extend(crc32c::Value(header.data(), header.size()), payload.data(), payload.size());
  std::string record;
  record.reserve(kRecordHeader + payload.size());
  coding::PutFixed32(&record, crc32c::Mask(crc));
  record += header;
  record.append(payload.data(), payload.size());
  return record;
}

// Segment names are the zero-padded first sequence, so they sort in order.
bool ParseSegmentName(const std::string& name, uint64_t* first) {
  if (name.size() != 20 + kSuffix.size() || name.substr(20) != kSuffix) return false;
  return absl::SimpleAtoi(name.substr(0, 20), first);
}

absl::Status Unavailable(const absl::Status& cause, std::string_view what) {
  return absl::UnavailableError(absl::StrCat(std::string(what), ": ", cause.message()));
}

// One record read at an offset of a segment.
struct RecordAt {
  // kBadLength: a whole header whose length field is above
  // FileUpdateLog::kMaxPayloadBytes, which no append writes and no torn
  // append can leave (a cut shortens a record, it does not rewrite it).
  enum State { kWhole, kPartial, kBadChecksum, kBadLength } state = kPartial;
  uint64_t sequence = 0;
  std::string_view payload;
  size_t size = 0;  // header + payload, as the length field says
};

// Decodes the record at `offset`: kPartial if its header or payload runs
// past the end of `bytes`, kBadLength if its length is impossible.
RecordAt RecordAtOffset(std::string_view bytes, size_t offset) {
  RecordAt r;
  coding::Decoder in(bytes.substr(offset));
  uint32_t crc = 0, length = 0;
  if (!in.GetFixed32(&crc) || !in.GetFixed32(&length) || !in.GetFixed64(&r.sequence)) return r;
  r.size = kRecordHeader + size_t{length};
  if (length > FileUpdateLog::kMaxPayloadBytes) {
    r.state = RecordAt::kBadLength;
    return r;
  }
  if (!in.GetBytes(length, &r.payload)) return r;
  const bool valid = RecordCrc(bytes.substr(offset + 4, kRecordHeader - 4 + length)) == crc;
  r.state = valid ? RecordAt::kWhole : RecordAt::kBadChecksum;
  return r;
}

// The highest sequence above `above` of a valid record starting anywhere in
// `bytes` from `from` on (0 if none): evidence that what follows a damaged
// record is not a torn tail, and of the records at stake.
uint64_t HighestSequenceAfter(std::string_view bytes, size_t from, uint64_t above) {
  uint64_t highest = 0;
  for (size_t offset = from; offset + kRecordHeader <= bytes.size();) {
    uint64_t sequence = 0;
    coding::Decoder(bytes.substr(offset + 8)).GetFixed64(&sequence);
    if (sequence > above) {
      const RecordAt r = RecordAtOffset(bytes, offset);
      if (r.state == RecordAt::kWhole) {
        highest = std::max(highest, r.sequence);
        offset += r.size;
        continue;
      }
    }
    ++offset;
  }
  return highest;
}

// A segment's whole, consecutive records from its first sequence, and what
// follows them.
struct SegmentScan {
  enum Kind { kClean, kTornTail, kDamaged } kind = kClean;
  uint64_t last = 0;     // the last record of the whole prefix
  size_t whole = 0;      // the prefix's bytes
  std::string what;      // kDamaged: what is wrong at byte `whole`
  uint64_t highest = 0;  // the highest valid-looking record after the prefix
};

SegmentScan ScanSegment(std::string_view bytes, uint64_t first) {
  SegmentScan scan;
  scan.last = first - 1;
  while (scan.whole < bytes.size()) {
    const RecordAt r = RecordAtOffset(bytes, scan.whole);
    if (r.state == RecordAt::kWhole && r.sequence == scan.last + 1) {
      ++scan.last;
      scan.whole += r.size;
      continue;
    }
    scan.highest = HighestSequenceAfter(bytes, scan.whole, scan.last);
    const bool zeros = bytes.find_first_not_of('\0', scan.whole) == std::string_view::npos;
    if ((r.state == RecordAt::kPartial && scan.highest == 0) || zeros) {
      // The write was cut (nothing valid follows), or the file system
      // extended the file without its data, as a power loss can leave it.
      scan.kind = SegmentScan::kTornTail;
    } else {
      scan.kind = SegmentScan::kDamaged;
      if (r.state == RecordAt::kWhole) {
        scan.what =
            absl::StrCat("record ", r.sequence, " where record ", scan.last + 1, " was expected");
      } else if (r.state == RecordAt::kBadChecksum) {
        scan.what = absl::StrCat("a record of ", r.size, " bytes fails its checksum");
      } else if (r.state == RecordAt::kBadLength) {
        scan.what = absl::StrCat("a record's length field reads ", r.size - kRecordHeader,
                                 " bytes, above the maximum of ", FileUpdateLog::kMaxPayloadBytes);
      } else {
        scan.what = "a record runs past the end of the file but valid records follow it";
      }
    }
    return scan;
  }
  return scan;
}

// "records A to at least B follow the damage", or without B if unknown.
std::string Stake(uint64_t from, uint64_t at_least) {
  if (at_least < from) return absl::StrCat("records from ", from, " on, if any, follow the damage");
  return absl::StrCat("records ", from, " to at least ", at_least, " follow the damage");
}

constexpr char kManifestName[] = "MANIFEST";
constexpr char kManifestMagic[] = "CLKDLOGM";
constexpr size_t kManifestBytes = 8 + 8 + 8 + 4;

struct Manifest {
  uint64_t newest_segment = 0;
  uint64_t high_water = 0;
};

// A copy of MANIFEST beside the log's directory (`log.MANIFEST` next to
// `log/`): deleting MANIFEST together with the newest segment inside the
// directory still leaves a record of what was written (issue 33, N13).
constexpr char kManifestCopySuffix[] = ".MANIFEST";

// Reads the manifest at `path` (`name` for messages): nullopt if there is
// none (a log from before it, or from before its copy).
absl::StatusOr<std::optional<Manifest>> ReadManifest(Env* env, const std::string& path,
                                                     const std::string& name) {
  if (!env->FileExists(path)) return std::nullopt;
  auto bytes = ReadWholeFile(env, path);
  if (!bytes.ok()) return bytes.status();
  Manifest m;
  std::string_view magic;
  uint32_t crc = 0;
  coding::Decoder in(*bytes);
  if (bytes->size() != kManifestBytes || !in.GetBytes(8, &magic) || magic != kManifestMagic ||
      !in.GetFixed64(&m.newest_segment) || !in.GetFixed64(&m.high_water) || !in.GetFixed32(&crc) ||
      RecordCrc(std::string_view(*bytes).substr(0, 24)) != crc) {
    return absl::DataLossError(absl::StrCat(name, ": the log's manifest is damaged"));
  }
  return m;
}

}  // namespace

// The first damage that stops Open, and what salvaging it keeps.
struct FileUpdateLog::Damage {
  absl::Status status;    // DataLoss, or OK if there is none
  size_t index = 0;       // the first segment to move aside (firsts.size(): none)
  size_t whole = 0;       // bytes of whole records to keep from segment `index`
  uint64_t last = 0;      // the last record kept
  uint64_t at_least = 0;  // the highest record known to have existed
};

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
  for (;;) {
    const RecordAt r = RecordAtOffset(bytes, whole);
    if (r.state != RecordAt::kWhole) return whole;
    record(r.sequence, r.payload);
    whole += r.size;
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

std::string FileUpdateLog::RelativeName(std::string_view name) const {
  const size_t slash = dir_.rfind('/');
  return absl::StrCat(slash == std::string::npos ? dir_ : dir_.substr(slash + 1), "/",
                      std::string(name));
}

std::string FileUpdateLog::SegmentName(uint64_t first_sequence) const {
  return RelativeName(absl::StrFormat("%020d%s", first_sequence, std::string(kSuffix)));
}

absl::Status FileUpdateLog::PublishManifest(uint64_t newest_segment, uint64_t high_water) {
  std::string bytes(kManifestMagic);
  coding::PutFixed64(&bytes, newest_segment);
  coding::PutFixed64(&bytes, high_water);
  coding::PutFixed32(&bytes, RecordCrc(bytes));
  auto write = [&bytes](WritableFile* f) { return f->Append(bytes); };
  if (absl::Status s = WriteFileAtomically(env_, absl::StrCat(dir_, "/", kManifestName), write);
      !s.ok()) {
    return s;
  }
  return WriteFileAtomically(env_, absl::StrCat(dir_, kManifestCopySuffix), write);
}

absl::StatusOr<std::unique_ptr<FileUpdateLog>> FileUpdateLog::Open(Env* env, const std::string& dir,
                                                                   UpdateLogOptions options,
                                                                   UpdateLogRecovery* recovery,
                                                                   const LogRecoveryOptions& how) {
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
  auto manifest =
      ReadManifest(env, absl::StrCat(dir, "/", kManifestName), log->RelativeName(kManifestName));
  std::string copy_name = log->RelativeName("");  // "log/"
  copy_name.back() = '.';
  copy_name += std::string(kManifestCopySuffix).substr(1);  // "log.MANIFEST"
  auto copy = ReadManifest(env, absl::StrCat(dir, kManifestCopySuffix), copy_name);
  for (const auto* read : {&manifest, &copy}) {
    if (read->ok()) continue;
    if (!how.salvage_damaged) return read->status();
    if (found.salvaged_damage.empty()) {
      found.salvaged_damage = std::string(read->status().message());
    }
  }
  // The manifest that says the most was written: the copy when MANIFEST
  // was deleted (or is older, after a failed publish of the copy's twin).
  const Manifest* high = manifest.ok() && manifest->has_value() ? &**manifest : nullptr;
  bool high_is_copy = false;
  if (copy.ok() && copy->has_value() &&
      (high == nullptr || std::make_pair((*copy)->newest_segment, (*copy)->high_water) >
                              std::make_pair(high->newest_segment, high->high_water))) {
    high = &**copy;
    high_is_copy = true;
  }
  Damage damage;
  if (absl::Status s =
          log->ScanSegments(firsts, how, high != nullptr ? high->high_water : 0, &found, &damage);
      !s.ok()) {
    return s;
  }
  if (damage.status.ok() && high != nullptr) {
    damage = log->CheckManifest(firsts, high->newest_segment, high->high_water,
                                how.snapshot_sequence.value_or(0),
                                high_is_copy ? copy_name : std::string(kManifestName));
  }
  const bool salvaged = !damage.status.ok();
  if (salvaged) {
    if (!how.salvage_damaged) return damage.status;
    if (absl::Status s = log->Salvage(firsts, damage, &found); !s.ok()) return s;
  } else {
    log->last_sequence_ = log->segments_.empty() ? 0 : log->segments_.back().last_sequence;
  }
  // What both manifests say, if they agree: Resume need not write them again.
  std::optional<std::pair<uint64_t, uint64_t>> published;
  if (manifest.ok() && manifest->has_value() && copy.ok() && copy->has_value() &&
      (*manifest)->newest_segment == (*copy)->newest_segment &&
      (*manifest)->high_water == (*copy)->high_water) {
    published = std::make_pair((*manifest)->newest_segment, (*manifest)->high_water);
  }
  if (absl::Status s =
          log->Resume(found.torn_tail_bytes > 0, published, /*keep_on_failure=*/!salvaged, &found);
      !s.ok()) {
    return s;
  }
  for (const Segment& segment : log->segments_) {
    if (!segment.damaged) found.records += segment.last_sequence + 1 - segment.first_sequence;
  }
  if (recovery != nullptr) *recovery = found;
  if (options.sync == SyncMode::kInterval) {
    log->syncer_ = std::thread([raw = log.get()] { raw->SyncLoop(); });
  }
  return log;
}

FileUpdateLog::Damage FileUpdateLog::CheckManifest(const std::vector<uint64_t>& firsts,
                                                   uint64_t newest_segment, uint64_t high_water,
                                                   uint64_t snapshot_sequence,
                                                   const std::string& manifest_name) const {
  const uint64_t last = segments_.empty() ? snapshot_sequence : segments_.back().last_sequence;
  if (!std::binary_search(firsts.begin(), firsts.end(), newest_segment)) {
    return {absl::DataLossError(absl::StrCat(
                SegmentName(newest_segment), " is missing (", manifest_name,
                " names it as the newest segment): ", Stake(newest_segment, high_water))),
            firsts.size(), 0, last, high_water};
  }
  if (last < high_water) {
    const Segment& newest = segments_.back();
    return {absl::DataLossError(absl::StrCat(SegmentName(newest.first_sequence), ": ends at byte ",
                                             newest.bytes, " after record ", last, " but ",
                                             manifest_name, " says record ", high_water,
                                             " was written: ", Stake(last + 1, high_water))),
            firsts.size() - 1, newest.bytes, last, high_water};
  }
  return {};
}

absl::Status FileUpdateLog::Resume(bool cut_torn_tail,
                                   std::optional<std::pair<uint64_t, uint64_t>> published,
                                   bool keep_on_failure, UpdateLogRecovery* found) {
  if (segments_.empty()) {
    if (absl::Status s = StartSegment(last_sequence_ + 1); !s.ok()) return s;
  } else {
    const Segment& newest = segments_.back();
    const std::string path = SegmentPath(newest.first_sequence);
    if (cut_torn_tail) {
      // A crash mid-append: keep the whole records, cut the partial one.
      if (absl::Status s = env_->TruncateFile(path, newest.bytes); !s.ok()) return s;
    }
    auto file = env_->NewWritableFile(path, /*append=*/true);
    if (!file.ok()) return file.status();
    active_ = *std::move(file);
    // What survived is on disk from now on: the high-water mark may say so.
    if (absl::Status s = active_->Sync(); !s.ok()) return s;
    if (published != std::make_pair(newest.first_sequence, last_sequence_)) {
      if (absl::Status s = PublishManifest(newest.first_sequence, last_sequence_); !s.ok()) {
        // The manifest on disk names no record beyond what the scan found,
        // so it stays true: only a later loss of the newest records is
        // detected less well until the next publish.
        if (!keep_on_failure) return s;
        found->manifest_kept = std::string(s.message());
        synced_sequence_ = last_sequence_;
        return absl::OkStatus();  // unclaimed: the first sync publishes again
      }
    }
    claimed_segment_ = newest.first_sequence;
  }
  synced_sequence_ = last_sequence_;
  return absl::OkStatus();
}

uint64_t FileUpdateLog::HighestSequenceFrom(const std::vector<uint64_t>& firsts, size_t from,
                                            uint64_t high_water) const {
  uint64_t highest = high_water;
  for (size_t j = from; j < firsts.size(); ++j) {
    auto bytes = ReadWholeFile(env_, SegmentPath(firsts[j]));
    if (bytes.ok()) highest = std::max(highest, HighestSequenceAfter(*bytes, 0, firsts[j] - 1));
  }
  return highest;
}

bool FileUpdateLog::CheckSegmentStart(const std::vector<uint64_t>& firsts, size_t i,
                                      const LogRecoveryOptions& how, uint64_t high_water,
                                      UpdateLogRecovery* found, Damage* damage) const {
  const uint64_t covered = how.snapshot_sequence.value_or(0);
  const uint64_t first = firsts[i];
  // The boundary with what comes before: the snapshot, or the previous segment.
  const uint64_t before = segments_.empty() ? covered : segments_.back().last_sequence;
  if (segments_.empty() && how.snapshot_sequence.has_value() && first > covered + 1) {
    const uint64_t at_least = HighestSequenceFrom(firsts, i, high_water);
    *damage = {
        absl::DataLossError(absl::StrCat(
            SegmentName(first), ": the update log starts at record ", first, " but ",
            covered == 0 ? std::string("no snapshot reads back")
                         : absl::StrCat("the newest readable snapshot ends at record ", covered),
            ": records ", covered + 1, "..", first - 1, " are missing; ",
            Stake(covered + 1, at_least))),
        i, 0, covered, at_least};
    return true;
  }
  if (!segments_.empty() && first != before + 1) {
    const bool gap = first > before + 1;
    const std::string what = absl::StrCat(
        SegmentName(first), ": starts at record ", first, " but ",
        SegmentName(segments_.back().first_sequence), " ends at record ", before, ": records ",
        gap ? absl::StrCat(before + 1, "..", first - 1, " are missing")
            : absl::StrCat(first, "..", before, " appear twice"));
    if ((gap ? first - 1 : before) > covered) {
      const uint64_t at_least = HighestSequenceFrom(firsts, i, high_water);
      *damage = {absl::DataLossError(absl::StrCat(what, "; ", Stake(before + 1, at_least))), i, 0,
                 before, at_least};
      return true;
    }
    found->covered_damage.push_back(
        absl::StrCat(what, "; the snapshot at record ", covered, " holds them"));
  }
  return false;
}

absl::Status FileUpdateLog::ScanSegments(const std::vector<uint64_t>& firsts,
                                         const LogRecoveryOptions& how, uint64_t high_water,
                                         UpdateLogRecovery* found, Damage* damage) {
  const uint64_t covered = how.snapshot_sequence.value_or(0);
  for (size_t i = 0; i < firsts.size(); ++i) {
    const uint64_t first = firsts[i];
    const bool newest = i + 1 == firsts.size();
    if (CheckSegmentStart(firsts, i, how, high_water, found, damage)) return absl::OkStatus();
    auto bytes = ReadWholeFile(env_, SegmentPath(first));
    if (!bytes.ok()) return bytes.status();
    const SegmentScan scan = ScanSegment(*bytes, first);
    if (scan.kind == SegmentScan::kClean || (scan.kind == SegmentScan::kTornTail && newest)) {
      found->torn_tail_bytes = bytes->size() - scan.whole;
      segments_.push_back({first, scan.last, scan.whole});
      continue;
    }
    const std::string what = scan.kind == SegmentScan::kTornTail
                                 ? "a partial record in a segment that is not the newest"
                                 : scan.what;
    const std::string where =
        absl::StrCat(SegmentName(first), ": damaged at byte ", scan.whole, " (", what, ")");
    if (!newest && firsts[i + 1] - 1 <= covered) {
      found->covered_damage.push_back(
          absl::StrCat(where, "; the snapshot at record ", covered, " holds all its records"));
      segments_.push_back({first, firsts[i + 1] - 1, bytes->size(), /*damaged=*/true});
      continue;
    }
    const uint64_t at_least =
        std::max(scan.highest, HighestSequenceFrom(firsts, i + 1, high_water));
    *damage = {absl::DataLossError(absl::StrCat(where, ": ", Stake(scan.last + 1, at_least))), i,
               scan.whole, scan.last, at_least};
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status FileUpdateLog::Salvage(const std::vector<uint64_t>& firsts, const Damage& damage,
                                    UpdateLogRecovery* found) {
  const std::string suffix = absl::StrCat(".damaged-", env_->NowMicros() / 1000000);
  while (damage.index < firsts.size() && !segments_.empty() &&
         segments_.back().first_sequence >= firsts[damage.index]) {
    segments_.pop_back();
  }
  for (size_t i = damage.index; i < firsts.size(); ++i) {
    const std::string path = SegmentPath(firsts[i]);
    if (absl::Status s = env_->RenameFile(path, path + suffix); !s.ok()) return s;
    found->moved_aside.push_back(SegmentName(firsts[i]) + suffix);
  }
  if (damage.index < firsts.size() && damage.whole > 0) {
    // The whole records before the damage stay, under the segment's name.
    const std::string path = SegmentPath(firsts[damage.index]);
    auto bytes = ReadWholeFile(env_, path + suffix);
    if (!bytes.ok()) return bytes.status();
    const std::string_view kept = std::string_view(*bytes).substr(0, damage.whole);
    if (absl::Status s =
            WriteFileAtomically(env_, path, [kept](WritableFile* f) { return f->Append(kept); });
        !s.ok()) {
      return s;
    }
    segments_.push_back({firsts[damage.index], damage.last, damage.whole});
  }
  if (absl::Status s = env_->SyncDir(dir_); !s.ok()) return s;
  if (!found->salvaged_damage.empty()) found->salvaged_damage += "; ";
  found->salvaged_damage += std::string(damage.status.message());
  found->dropped_from = damage.last + 1;
  found->dropped_at_least_through = damage.at_least;
  if (damage.index < firsts.size()) found->torn_tail_bytes = 0;  // moved aside with the newest
  last_sequence_ = segments_.empty() ? damage.last : segments_.back().last_sequence;
  return absl::OkStatus();
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
  if (absl::Status s = env_->SyncDir(dir_); !s.ok()) return s;
  // Once MANIFEST names it, the segment missing later is damage.
  return PublishManifest(first_sequence, first_sequence - 1);
}

absl::StatusOr<uint64_t> FileUpdateLog::Append(std::string_view payload) {
  if (payload.size() > kMaxPayloadBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the update log's record would take ", payload.size(), " bytes; the limit is ",
        kMaxPayloadBytes, " bytes per record: send fewer or smaller examples per request"));
  }
  MutexLock lock(&mu_);
  if (!broken_.ok()) return broken_;
  if (!sync_failure_.ok())
    return Unavailable(sync_failure_, "the update log failed to sync earlier");
  const uint64_t sequence = last_sequence_ + 1;
  const std::string record = EncodeRecord(sequence, payload);
  Segment& segment = segments_.back();
  if (absl::Status s = active_->Append(record); !s.ok()) {
    // Cut off whatever prefix reached the file, so that the log stays whole.
    const std::string path = SegmentPath(segment.first_sequence);
    if (absl::Status t = env_->TruncateFile(path, segment.bytes); !t.ok()) {
      // A later record would land after the partial one, where a restart
      // stops reading: acknowledging it would lose it.
      broken_ = absl::UnavailableError(
          absl::StrCat("the update log needs a restart: an append to ",
                       SegmentName(segment.first_sequence), " failed (", s.message(),
                       ") and cutting off its partial record failed too (", t.message(), ")"));
      return broken_;
    }
    return Unavailable(s, "cannot append to the update log");
  }
  segment.bytes += record.size();
  segment.last_sequence = sequence;
  last_sequence_ = sequence;
  if (gathering_) appended_cv_.Signal();
  return sequence;
}

void FileUpdateLog::ClaimSynced(uint64_t synced) {
  // Raises MANIFEST's high-water mark once per segment, the first time its
  // records are synced, so that a restart finding the segment emptied knows
  // records were lost. The sync was of the active segment (rolls wait for
  // syncs), so `synced` is in segments_.back().
  const Segment& segment = segments_.back();
  if (claimed_segment_ == segment.first_sequence || synced < segment.first_sequence) return;
  claimed_segment_ = segment.first_sequence;
  // A failed publish leaves the previous MANIFEST, which is still true: only
  // the detection of an emptied segment is weaker, so the sync stands.
  (void)PublishManifest(segment.first_sequence, synced);
}

absl::Status FileUpdateLog::WaitDurable(uint64_t sequence) {
  mu_.Lock();
  if (!broken_.ok() || options_.sync != SyncMode::kEveryRequest) {
    const absl::Status broken = broken_;
    mu_.Unlock();
    return broken;
  }
  // Group commit: one caller at a time syncs, with the lock released so
  // that others keep appending meanwhile; callers queued behind it find
  // their record synced, or sync everything appended since in one go
  // (after gathering the records of writers that take turns: GatherGroup).
  while (synced_sequence_ < sequence && sync_failure_.ok() && syncing_) synced_cv_.Wait(&mu_);
  if (synced_sequence_ >= sequence || !sync_failure_.ok()) {
    const absl::Status failure = sync_failure_;
    const bool durable = synced_sequence_ >= sequence;
    mu_.Unlock();
    if (durable) return absl::OkStatus();
    return Unavailable(failure, "the update log failed to sync");
  }
  syncing_ = true;  // TruncateThrough waits, so `file` outlives the sync
  GatherGroup();
  const uint64_t before = synced_sequence_;
  const uint64_t target = last_sequence_;
  WritableFile* file = active_.get();
  mu_.Unlock();
  uint64_t micros = 0;
  const absl::Status status = TimedSync(file, &micros);
  mu_.Lock();
  syncing_ = false;
  last_sync_micros_ = micros;
  expected_group_ = std::max<uint64_t>(1, last_sequence_ - before);
  if (status.ok()) {
    synced_sequence_ = std::max(synced_sequence_, target);
    ClaimSynced(target);
  } else {
    sync_failure_ = status;
  }
  synced_cv_.SignalAll();
  mu_.Unlock();
  if (!status.ok()) return Unavailable(status, "the update log failed to sync");
  return absl::OkStatus();
}

void FileUpdateLog::GatherGroup() {
  if (expected_group_ <= 1 || options_.max_group_wait.count() == 0 || !broken_.ok()) return;
  const auto wait = std::min(std::chrono::microseconds(last_sync_micros_), options_.max_group_wait);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  gathering_ = true;
  while (last_sequence_ - synced_sequence_ < expected_group_) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero() || !appended_cv_.WaitFor(&mu_, left)) break;
  }
  gathering_ = false;
}

absl::Status FileUpdateLog::TimedSync(WritableFile* file, uint64_t* micros) {
  const uint64_t start = env_->NowMicros();
  absl::Status s = file->Sync();
  const uint64_t took = env_->NowMicros() - start;
  if (options_.on_sync) options_.on_sync(static_cast<double>(took) * 1e-6);
  if (micros != nullptr) *micros = took;
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
      ClaimSynced(target);
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
    if (segment.damaged) {
      return absl::DataLossError(
          absl::StrCat(SegmentName(segment.first_sequence), " is damaged: it cannot be read"));
    }
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
  std::vector<std::string> unneeded;
  {
    MutexLock lock(&mu_);
    // A WaitDurable syncing the active segment without the lock still uses
    // it; wait before reading last_sequence_, which appends move meanwhile.
    while (syncing_) synced_cv_.Wait(&mu_);
    // Roll to a fresh segment so that every older segment can go whole.
    if (segments_.back().bytes > 0) {
      if (absl::Status s = StartSegment(last_sequence_ + 1); !s.ok()) return s;
    }
    while (segments_.size() > 1 && segments_.front().last_sequence <= sequence) {
      unneeded.push_back(SegmentPath(segments_.front().first_sequence));
      segments_.erase(segments_.begin());
    }
  }
  // Removed without the lock: unlinking large files and syncing the
  // directory take file-system journal commits, and appends must not wait
  // for them. The log no longer lists these segments; one left behind by a
  // failure here or a crash holds only records an existing snapshot covers,
  // which Open skips, as after a crash between two removals before.
  for (const std::string& path : unneeded) {
    if (absl::Status s = env_->RemoveFile(path); !s.ok()) return s;
  }
  return env_->SyncDir(dir_);
}

absl::Status FileUpdateLog::ResetAfter(uint64_t sequence) {
  MutexLock lock(&mu_);
  while (syncing_) synced_cv_.Wait(&mu_);
  if (last_sequence_ > sequence) {
    return absl::FailedPreconditionError(absl::StrCat(dir_, " holds records after ", sequence,
                                                      "; only a log without them can start over"));
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
