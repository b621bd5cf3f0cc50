#include "core/persist/file_update_log.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/persist/fault_injection_env.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/update_log_test_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
  // PIDs repeat across runs: a directory of an earlier run, and the copy
  // of its MANIFEST the log keeps beside it (`<dir>.MANIFEST`), go first.
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".MANIFEST");
  std::filesystem::remove(dir + ".MANIFEST.tmp");
  EXPECT_TRUE(Env::Default()->CreateDirs(dir).ok());
  return dir;
}

std::unique_ptr<FileUpdateLog> OpenLog(Env* env, const std::string& dir,
                                       UpdateLogRecovery* recovery = nullptr,
                                       SyncMode sync = SyncMode::kEveryRequest) {
  UpdateLogOptions options;
  options.sync = sync;
  options.sync_interval = std::chrono::milliseconds(5);
  auto log = FileUpdateLog::Open(env, dir, options, recovery);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

std::vector<std::pair<uint64_t, std::string>> ReadAll(UpdateLog& log, uint64_t after = 0) {
  std::vector<std::pair<uint64_t, std::string>> out;
  EXPECT_TRUE(log.ReadAfter(after,
                            [&](uint64_t s, std::string_view p) {
                              out.emplace_back(s, std::string(p));
                              return absl::OkStatus();
                            })
                  .ok());
  return out;
}

TEST(FileUpdateLog, AppendReadReopen) {
  const std::string dir = NewDir();
  {
    auto log = OpenLog(Env::Default(), dir);
    EXPECT_EQ(*log->Append("a"), 1u);
    EXPECT_EQ(*log->Append(""), 2u);
    EXPECT_EQ(*log->Append(std::string(100000, 'x')), 3u);
    EXPECT_TRUE(log->WaitDurable(3).ok());
    EXPECT_EQ(ReadAll(*log, 1).size(), 2u);
  }
  UpdateLogRecovery recovery;
  auto log = OpenLog(Env::Default(), dir, &recovery);
  EXPECT_EQ(recovery.records, 3u);
  EXPECT_EQ(recovery.torn_tail_bytes, 0u);
  EXPECT_EQ(log->last_sequence(), 3u);
  const auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].second, "a");
  EXPECT_EQ(all[2].second.size(), 100000u);
  EXPECT_EQ(*log->Append("d"), 4u);
}

// A crash mid-append leaves any prefix of the last record: reopening keeps
// exactly the whole records before it, whatever the cut.
TEST(FileUpdateLog, TornTailIsCutAtTheLastWholeRecord) {
  const std::string dir = NewDir();
  std::string segment;
  {
    auto log = OpenLog(Env::Default(), dir);
    ASSERT_TRUE(log->Append("first").ok());
    ASSERT_TRUE(log->Append("second record").ok());
  }
  const std::string path = dir + "/00000000000000000001.log";
  segment = *ReadWholeFile(Env::Default(), path);
  const size_t first_record = 16 + 5;
  for (size_t cut = first_record; cut < segment.size(); ++cut) {
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, [&](WritableFile* f) {
                  return f->Append(std::string_view(segment).substr(0, cut));
                }).ok());
    UpdateLogRecovery recovery;
    auto log = OpenLog(Env::Default(), dir, &recovery);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->last_sequence(), 1u) << "cut " << cut;
    EXPECT_EQ(recovery.torn_tail_bytes, cut - first_record);
    EXPECT_EQ(*log->Append("again"), 2u);
  }
}

TEST(FileUpdateLog, DamageBeforeTheNewestSegmentIsDataLoss) {
  const std::string dir = NewDir();
  {
    auto log = OpenLog(Env::Default(), dir);
    ASSERT_TRUE(log->Append("one").ok());
    ASSERT_TRUE(log->TruncateThrough(0).ok());  // rolls to a new segment
    ASSERT_TRUE(log->Append("two").ok());
  }
  const std::string old_segment = dir + "/00000000000000000001.log";
  std::string bytes = *ReadWholeFile(Env::Default(), old_segment);
  bytes[18] ^= 1;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), old_segment, [&](WritableFile* f) {
                return f->Append(bytes);
              }).ok());
  auto log = FileUpdateLog::Open(Env::Default(), dir, {}, nullptr);
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss) << log.status();
}

TEST(FileUpdateLog, TruncateThroughDropsWholeSegments) {
  const std::string dir = NewDir();
  auto log = OpenLog(Env::Default(), dir);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(log->Append("r").ok());
  ASSERT_TRUE(log->TruncateThrough(5).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append("s").ok());
  EXPECT_EQ(ReadAll(*log).size(), 3u);
  EXPECT_EQ(ReadAll(*log).front().first, 6u);
  log.reset();
  log = OpenLog(Env::Default(), dir);
  EXPECT_EQ(log->last_sequence(), 8u);
  EXPECT_EQ(ReadAll(*log, 5).size(), 3u);
}

// TruncateThrough forgets old segments under its lock and unlinks them
// after: a segment a crash (or a failed unlink) leaves on disk holds only
// records before the truncation point, and a reopened log still reads on
// from there.
TEST(FileUpdateLog, ASegmentLeftBehindByTruncateThroughIsHarmless) {
  const std::string dir = NewDir();
  auto log = OpenLog(Env::Default(), dir);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(log->Append("r").ok());
  std::map<std::string, std::string> before;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    before[entry.path().string()] = *ReadWholeFile(Env::Default(), entry.path().string());
  }
  ASSERT_TRUE(log->TruncateThrough(5).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append("s").ok());
  log.reset();
  std::vector<std::string> restored;
  for (const auto& [path, bytes] : before) {
    if (std::filesystem::exists(path)) continue;
    std::ofstream(path, std::ios::binary) << bytes;  // as if never unlinked
    restored.push_back(path);
  }
  ASSERT_FALSE(restored.empty());
  log = OpenLog(Env::Default(), dir);
  EXPECT_EQ(log->last_sequence(), 8u);
  const auto after = ReadAll(*log, 5);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after.front().first, 6u);
  // The next truncation removes it.
  ASSERT_TRUE(log->TruncateThrough(8).ok());
  for (const std::string& path : restored) EXPECT_FALSE(std::filesystem::exists(path)) << path;
}

TEST(FileUpdateLog, FullDiskFailsTheAppendAndLeavesTheLogWhole) {
  FaultInjectionEnv env(Env::Default());
  const std::string dir = NewDir();
  auto log = OpenLog(&env, dir);
  ASSERT_TRUE(log->Append("kept").ok());
  env.SetWriteBudget(10);  // the next record gets a short write, then ENOSPC
  const auto failed = log->Append("this record does not fit");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("No space left on device"), std::string::npos);
  env.SetWriteBudget(-1);
  EXPECT_EQ(*log->Append("after"), 2u);
  ASSERT_TRUE(log->WaitDurable(2).ok());
  log.reset();
  log = OpenLog(&env, dir);
  const auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].second, "after");
}

// A record larger than a reader accepts is refused before anything is
// written: acknowledged, it would read as damaged at the next start.
TEST(FileUpdateLog, RecordBeyondWhatAReaderAcceptsIsRefusedAndWritesNothing) {
  const std::string dir = NewDir();
  auto log = OpenLog(Env::Default(), dir);
  ASSERT_TRUE(log->Append("kept").ok());
  const auto refused = log->Append(std::string(FileUpdateLog::kMaxPayloadBytes + 1, 'x'));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "the update log's record would take 268435457 bytes; the limit is 268435456 bytes "
            "per record: send fewer or smaller examples per request");
  EXPECT_EQ(*log->Append("after"), 2u);
  ASSERT_TRUE(log->WaitDurable(2).ok());
  log.reset();
  UpdateLogRecovery recovery;
  log = OpenLog(Env::Default(), dir, &recovery);
  EXPECT_EQ(recovery.torn_tail_bytes, 0u);
  const auto all = ReadAll(*log);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].second, "after");
}

TEST(FileUpdateLog, FailedSyncRefusesFurtherAppends) {
  FaultInjectionEnv env(Env::Default());
  auto log = OpenLog(&env, NewDir());
  ASSERT_TRUE(log->Append("a").ok());
  env.SetSyncFails(true);
  EXPECT_EQ(log->WaitDurable(1).code(), absl::StatusCode::kUnavailable);
  env.SetSyncFails(false);
  EXPECT_EQ(log->Append("b").status().code(), absl::StatusCode::kUnavailable);
}

// With every_request sync, everything WaitDurable acknowledged survives a
// power loss; what was never synced may not.
TEST(FileUpdateLog, AcknowledgedRecordsSurviveLostUnsyncedData) {
  FaultInjectionEnv env(Env::Default());
  const std::string dir = NewDir();
  auto log = OpenLog(&env, dir);
  for (int i = 1; i <= 20; ++i) {
    ASSERT_EQ(*log->Append("r" + std::to_string(i)), static_cast<uint64_t>(i));
    if (i <= 12) {
      ASSERT_TRUE(log->WaitDurable(i).ok());
    }
  }
  log.reset();  // a clean close syncs; simulate the crash before it instead:
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  log = OpenLog(&env, dir);
  EXPECT_GE(log->last_sequence(), 12u);
}

TEST(FileUpdateLog, GroupCommitUnderConcurrentWriters) {
  const std::string dir = NewDir();
  auto log = OpenLog(Env::Default(), dir);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        auto seq = log->Append("x");
        ASSERT_TRUE(seq.ok());
        ASSERT_TRUE(log->WaitDurable(*seq).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(log->last_sequence(), 200u);
  EXPECT_EQ(ReadAll(*log).size(), 200u);
}

// Holds the syncs of log segments (*.log; not MANIFEST's) in flight
// (FaultInjectionEnv::SetSyncHook) until the test lets them through,
// counting those that started.
class SyncGate {
 public:
  explicit SyncGate(FaultInjectionEnv* env) {
    env->SetSyncHook([this](const std::string& path) {
      if (!absl::EndsWith(path, ".log")) return;
      std::unique_lock<std::mutex> lock(mu_);
      ++started_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return allowed_ >= started_; });
    });
  }
  int started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  void AwaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_ >= n; });
  }
  void Allow(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    allowed_ = n;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int started_ = 0;
  int allowed_ = 0;
};

// Two writers taking turns, each waiting for its record's sync before it
// sends the next (as two UpdateStreams do): B's record lands while A's sync
// runs. Without gathering, B would then sync its record alone while A's
// next record arrives, and so on, one sync per record. B's sync instead
// waits for A's next record (up to the last sync's duration) and covers
// both.
TEST(FileUpdateLog, WritersTakingTurnsShareTheNextSync) {
  const std::string dir = NewDir();
  FaultInjectionEnv env(Env::Default());
  UpdateLogOptions options;
  options.max_group_wait = std::chrono::seconds(60);
  auto opened = FileUpdateLog::Open(&env, dir, options, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<FileUpdateLog> log = *std::move(opened);
  SyncGate gate(&env);

  auto a1 = log->Append("a1");
  ASSERT_TRUE(a1.ok());
  std::thread a([&] { EXPECT_TRUE(log->WaitDurable(*a1).ok()); });
  gate.AwaitStarted(1);
  auto b1 = log->Append("b1");  // while A's sync runs
  ASSERT_TRUE(b1.ok());
  std::thread b([&] { EXPECT_TRUE(log->WaitDurable(*b1).ok()); });
  // A's sync takes a second, so B may gather for up to a second.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  gate.Allow(1);
  a.join();
  // B gathers instead of syncing b1 alone.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(gate.started(), 1);
  auto a2 = log->Append("a2");
  ASSERT_TRUE(a2.ok());
  gate.AwaitStarted(2);
  gate.Allow(100);
  b.join();
  EXPECT_TRUE(log->WaitDurable(*a2).ok());
  EXPECT_EQ(gate.started(), 2) << "a2 needed a sync of its own";
  EXPECT_EQ(ReadAll(*log).size(), 3u);

  // A lone writer never waits to gather: with the gate open, a sync per
  // record, and every record durable.
  for (int i = 0; i < 5; ++i) {
    auto seq = log->Append("lone");
    ASSERT_TRUE(seq.ok());
    ASSERT_TRUE(log->WaitDurable(*seq).ok());
  }
  EXPECT_EQ(gate.started(), 7);
  env.SetSyncHook(nullptr);  // the log's destructor syncs after the gate is gone
}

// Simulates a crash: the log is never destroyed (its destructor would sync),
// but stays reachable so that LeakSanitizer is content.
void Crash(std::unique_ptr<FileUpdateLog> log) {
  static auto* abandoned = new std::vector<std::unique_ptr<FileUpdateLog>>();
  abandoned->push_back(std::move(log));
}

// Writers sync without the log's lock while others append and a truncation
// rolls segments: every acknowledged record survives a power loss.
TEST(FileUpdateLog, ConcurrentAcknowledgedRecordsSurviveAPowerLoss) {
  const std::string dir = NewDir();
  FaultInjectionEnv env(Env::Default());
  std::atomic<int> syncs{0};
  UpdateLogOptions options;
  options.on_sync = [&syncs](double) { ++syncs; };
  auto opened = FileUpdateLog::Open(&env, dir, options, nullptr);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<FileUpdateLog> log = *std::move(opened);
  std::atomic<uint64_t> acknowledged{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        auto seq = log->Append("record");
        ASSERT_TRUE(seq.ok());
        ASSERT_TRUE(log->WaitDurable(*seq).ok());
        acknowledged.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(log->TruncateThrough(0).ok());
  });
  for (auto& t : threads) t.join();
  EXPECT_LE(syncs.load(), 400 + 20);
  Crash(std::move(log));  // no destructor: it would sync
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  auto reopened = OpenLog(Env::Default(), dir);
  EXPECT_EQ(ReadAll(*reopened).size(), acknowledged.load());
  EXPECT_EQ(acknowledged.load(), 400u);
}

TEST(FileUpdateLog, IntervalModeSyncsInTheBackground) {
  const std::string dir = NewDir();
  auto log = OpenLog(Env::Default(), dir, nullptr, SyncMode::kInterval);
  ASSERT_EQ(*log->Append("a"), 1u);
  EXPECT_TRUE(log->WaitDurable(1).ok());  // returns at once in this mode
  log.reset();
  EXPECT_EQ(OpenLog(Env::Default(), dir)->last_sequence(), 1u);
}

// Damage other than a torn tail: DataLoss naming the file, the byte and
// the records at stake, and nothing on disk changes; salvaging keeps the
// records before the damage and moves the damaged segments aside.

// Payloads of 8 bytes: every record is 24 bytes, record k at (k - 1) * 24.
std::string Payload(int k) { return absl::StrFormat("record%02d", k); }
constexpr size_t kRecordBytes = 24;

// A log in `<dir>/log` holding records 1..`records`, a new segment starting
// after each sequence in `rolls`.
std::string WriteLog(int records, std::vector<int> rolls = {}) {
  const std::string dir = NewDir() + "/log";
  auto log = OpenLog(Env::Default(), dir);
  for (int k = 1; k <= records; ++k) {
    EXPECT_EQ(*log->Append(Payload(k)), static_cast<uint64_t>(k));
    EXPECT_TRUE(log->WaitDurable(k).ok());  // acknowledged
    if (std::find(rolls.begin(), rolls.end(), k) != rolls.end()) {
      EXPECT_TRUE(log->TruncateThrough(0).ok());
    }
  }
  return dir;
}

std::string Segment(uint64_t first) { return absl::StrFormat("%020d.log", first); }

// Every file of `dir` with its bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    files[name] = *ReadWholeFile(Env::Default(), dir + "/" + name);
  }
  return files;
}

void Rewrite(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, [&](WritableFile* f) {
                return f->Append(bytes);
              }).ok());
}

void FlipByte(const std::string& path, size_t offset) {
  std::string bytes = *ReadWholeFile(Env::Default(), path);
  bytes[offset] ^= 0x20;
  Rewrite(path, bytes);
}

// Opens `dir` expecting DataLoss with `message`, and checks that no file changed.
void ExpectDataLoss(const std::string& dir, const std::string& message,
                    uint64_t snapshot_sequence = 0) {
  const auto before = Files(dir);
  LogRecoveryOptions how;
  how.snapshot_sequence = snapshot_sequence;
  auto log = FileUpdateLog::Open(Env::Default(), dir, {}, nullptr, how);
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss) << log.status();
  EXPECT_EQ(log.status().message(), message);
  EXPECT_EQ(Files(dir), before);
}

std::unique_ptr<FileUpdateLog> Salvage(const std::string& dir, UpdateLogRecovery* recovery) {
  LogRecoveryOptions how;
  how.salvage_damaged = true;
  auto log = FileUpdateLog::Open(Env::Default(), dir, {}, recovery, how);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

// The one file of `dir` that a salvage moved aside, by the name it had.
std::string MovedAside(const std::string& dir, const std::string& name) {
  for (const auto& [file, bytes] : Files(dir)) {
    if (file.rfind(name + ".damaged-", 0) == 0) return bytes;
  }
  ADD_FAILURE() << name << " was not moved aside";
  return "";
}

TEST(FileUpdateLogDamage, FlippedByteInTheNewestSegmentIsNotATornTail) {
  const std::string dir = WriteLog(10);
  const std::string path = dir + "/" + Segment(1);
  FlipByte(path, 4 * kRecordBytes + 20);  // record 5's payload
  const std::string damaged = *ReadWholeFile(Env::Default(), path);
  const std::string message =
      "log/00000000000000000001.log: damaged at byte 96 (a record of 24 bytes fails its "
      "checksum): records 5 to at least 10 follow the damage";
  ExpectDataLoss(dir, message);

  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(recovery.salvaged_damage, message);
  EXPECT_EQ(recovery.dropped_from, 5u);
  EXPECT_EQ(recovery.dropped_at_least_through, 10u);
  ASSERT_EQ(recovery.moved_aside.size(), 1u);
  EXPECT_EQ(recovery.moved_aside[0].rfind("log/00000000000000000001.log.damaged-", 0), 0u);
  EXPECT_EQ(recovery.torn_tail_bytes, 0u);
  EXPECT_EQ(log->last_sequence(), 4u);
  EXPECT_EQ(MovedAside(dir, Segment(1)), damaged);  // nothing destroyed
  EXPECT_EQ(*log->Append(Payload(5)), 5u);
  log.reset();
  log = OpenLog(Env::Default(), dir);  // whole again: no salvage needed
  EXPECT_EQ(ReadAll(*log).size(), 5u);
}

TEST(FileUpdateLogDamage, DamagedLengthWithValidRecordsAfterIsNotATornTail) {
  const std::string dir = WriteLog(10);
  FlipByte(dir + "/" + Segment(1), 4 * kRecordBytes + 7);  // record 5's length, top byte
  ExpectDataLoss(dir,
                 "log/00000000000000000001.log: damaged at byte 96 (a record's length field "
                 "reads 536870920 bytes, above the maximum of 268435456): records 5 to at least "
                 "10 follow the damage");
}

// No torn append leaves a length above the maximum: in the last record too,
// it is damage, not a torn tail to cut (issue 33, N13).
TEST(FileUpdateLogDamage, ImpossibleLengthInTheLastRecordIsNotATornTail) {
  const std::string dir = WriteLog(10);
  FlipByte(dir + "/" + Segment(1), 9 * kRecordBytes + 7);  // record 10's length, top byte
  ExpectDataLoss(dir,
                 "log/00000000000000000001.log: damaged at byte 216 (a record's length field "
                 "reads 536870920 bytes, above the maximum of 268435456): records from 10 on, "
                 "if any, follow the damage");
}

TEST(FileUpdateLogDamage, FlippedByteInAnOlderSegment) {
  const std::string dir = WriteLog(10, {5});
  FlipByte(dir + "/" + Segment(1), 2 * kRecordBytes + 20);  // record 3
  const std::string message =
      "log/00000000000000000001.log: damaged at byte 48 (a record of 24 bytes fails its "
      "checksum): records 3 to at least 10 follow the damage";
  ExpectDataLoss(dir, message);
  // A snapshot at 4 does not hold record 5: still DataLoss.
  ExpectDataLoss(dir, message, /*snapshot_sequence=*/4);

  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->last_sequence(), 2u);
  EXPECT_EQ(recovery.moved_aside.size(), 2u);  // the damaged segment and the later one
  EXPECT_FALSE(Files(dir).count(Segment(6)));
  EXPECT_EQ(ReadAll(*log).size(), 2u);
  EXPECT_EQ(*log->Append("x"), 3u);
}

TEST(FileUpdateLogDamage, DamageASnapshotCoversDoesNotStopOpen) {
  const std::string dir = WriteLog(10, {5});
  FlipByte(dir + "/" + Segment(1), 2 * kRecordBytes + 20);
  const auto before = Files(dir);
  LogRecoveryOptions how;
  how.snapshot_sequence = 5;
  UpdateLogRecovery recovery;
  auto log = FileUpdateLog::Open(Env::Default(), dir, {}, &recovery, how);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(recovery.covered_damage.size(), 1u);
  EXPECT_EQ(recovery.covered_damage[0],
            "log/00000000000000000001.log: damaged at byte 48 (a record of 24 bytes fails its "
            "checksum); the snapshot at record 5 holds all its records");
  EXPECT_EQ(ReadAll(**log, 5).size(), 5u);
  EXPECT_EQ((*log)->last_sequence(), 10u);
  auto after = Files(dir);
  after.erase("MANIFEST");  // republished with the same segment
  auto expected = before;
  expected.erase("MANIFEST");
  EXPECT_EQ(after, expected);
  // The next truncation removes it, as any segment the snapshot holds.
  ASSERT_TRUE((*log)->TruncateThrough(5).ok());
  EXPECT_FALSE(Files(dir).count(Segment(1)));
}

TEST(FileUpdateLogDamage, DeletedNewestSegment) {
  const std::string dir = WriteLog(10, {5});
  OpenLog(Env::Default(), dir);  // a restart: the manifest's high-water mark is now 10
  ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/" + Segment(6)).ok());
  ExpectDataLoss(dir,
                 "log/00000000000000000006.log is missing (MANIFEST names it as the newest "
                 "segment): records 6 to at least 10 follow the damage");
  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->last_sequence(), 5u);
  EXPECT_EQ(recovery.dropped_from, 6u);
  EXPECT_TRUE(recovery.moved_aside.empty());
  EXPECT_EQ(*log->Append("x"), 6u);
}

TEST(FileUpdateLogDamage, EmptiedNewestSegment) {
  const std::string dir = WriteLog(10, {5});  // no restart: only record 6 is known
  ASSERT_TRUE(Env::Default()->TruncateFile(dir + "/" + Segment(6), 0).ok());
  ExpectDataLoss(dir,
                 "log/00000000000000000006.log: ends at byte 0 after record 5 but MANIFEST says "
                 "record 6 was written: records 6 to at least 6 follow the damage");
  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->last_sequence(), 5u);
  ASSERT_EQ(recovery.moved_aside.size(), 1u);
  EXPECT_EQ(MovedAside(dir, Segment(6)), "");
  EXPECT_EQ(*log->Append("x"), 6u);
}

// Whole records cut off the end of the newest segment look like a crash
// before they were written, unless a restart saw them: MANIFEST then knows.
TEST(FileUpdateLogDamage, RecordsCutAfterARestartAreKnown) {
  const std::string dir = WriteLog(10);
  OpenLog(Env::Default(), dir);
  ASSERT_TRUE(Env::Default()->TruncateFile(dir + "/" + Segment(1), 8 * kRecordBytes).ok());
  ExpectDataLoss(dir,
                 "log/00000000000000000001.log: ends at byte 192 after record 8 but MANIFEST says "
                 "record 10 was written: records 9 to at least 10 follow the damage");
}

TEST(FileUpdateLogDamage, SequenceGaps) {
  {  // a record missing inside a segment
    const std::string dir = WriteLog(10);
    const std::string path = dir + "/" + Segment(1);
    std::string bytes = *ReadWholeFile(Env::Default(), path);
    Rewrite(path, bytes.erase(2 * kRecordBytes, kRecordBytes));
    ExpectDataLoss(dir,
                   "log/00000000000000000001.log: damaged at byte 48 (record 4 where record 3 "
                   "was expected): records 3 to at least 10 follow the damage");
  }
  {  // a segment missing between two others
    const std::string dir = WriteLog(12, {5, 10});
    ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/" + Segment(6)).ok());
    ExpectDataLoss(dir,
                   "log/00000000000000000011.log: starts at record 11 but "
                   "log/00000000000000000001.log ends at record 5: records 6..10 are missing; "
                   "records 6 to at least 12 follow the damage");
    UpdateLogRecovery recovery;
    auto log = Salvage(dir, &recovery);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->last_sequence(), 5u);
  }
  {  // records between the snapshot and the first segment
    const std::string dir = WriteLog(12, {5, 10});
    ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/" + Segment(1)).ok());
    ExpectDataLoss(dir,
                   "log/00000000000000000006.log: the update log starts at record 6 but the "
                   "newest readable snapshot ends at record 3: records 4..5 are missing; records "
                   "4 to at least 12 follow the damage",
                   /*snapshot_sequence=*/3);
  }
}

TEST(FileUpdateLogDamage, TornTailIsStillCutAndReported) {
  const std::string dir = WriteLog(10);
  const std::string path = dir + "/" + Segment(1);
  ASSERT_TRUE(Env::Default()->TruncateFile(path, 9 * kRecordBytes + 5).ok());
  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);  // the same with or without salvage
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(recovery.torn_tail_bytes, 5u);
  EXPECT_TRUE(recovery.salvaged_damage.empty());
  EXPECT_TRUE(recovery.moved_aside.empty());
  EXPECT_EQ(log->last_sequence(), 9u);
  EXPECT_EQ(*Env::Default()->FileSize(path), 9 * kRecordBytes);
}

// A failed append whose partial record cannot be cut off leaves the log
// unable to take more records safely: nothing more is acknowledged.
TEST(FileUpdateLogDamage, FailedCleanUpAfterAFailedAppendPoisonsTheLog) {
  FaultInjectionEnv env(Env::Default());
  const std::string dir = NewDir();
  auto log = OpenLog(&env, dir);
  ASSERT_TRUE(log->Append("kept").ok());
  ASSERT_TRUE(log->WaitDurable(1).ok());
  env.SetWriteBudget(10);
  env.SetTruncateFails(true);
  const auto failed = log->Append("this record does not fit");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  env.SetWriteBudget(-1);
  env.SetTruncateFails(false);
  const auto later = log->Append("later");
  EXPECT_EQ(later.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(later.status().message().find("needs a restart"), std::string::npos) << later.status();
  EXPECT_EQ(log->WaitDurable(1).code(), absl::StatusCode::kUnavailable);
  log.reset();
  UpdateLogRecovery recovery;
  log = OpenLog(&env, dir, &recovery);
  EXPECT_EQ(log->last_sequence(), 1u);
  EXPECT_EQ(recovery.torn_tail_bytes, 10u);
}

TEST(FileUpdateLogDamage, DamagedManifest) {
  const std::string dir = WriteLog(10);
  FlipByte(dir + "/MANIFEST", 10);
  ExpectDataLoss(dir, "log/MANIFEST: the log's manifest is damaged");
  UpdateLogRecovery recovery;
  auto log = Salvage(dir, &recovery);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(recovery.salvaged_damage, "log/MANIFEST: the log's manifest is damaged");
  EXPECT_EQ(log->last_sequence(), 10u);  // every record kept
}

// A log written before MANIFEST existed opens as before and gets one.
TEST(FileUpdateLogDamage, LogWithoutAManifestOpens) {
  const std::string dir = WriteLog(10, {5});
  ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/MANIFEST").ok());
  ASSERT_TRUE(Env::Default()->RemoveFile(dir + ".MANIFEST").ok());
  EXPECT_EQ(OpenLog(Env::Default(), dir)->last_sequence(), 10u);
  EXPECT_TRUE(Files(dir).count("MANIFEST"));
  EXPECT_TRUE(Env::Default()->FileExists(dir + ".MANIFEST"));
}

// MANIFEST deleted together with the newest segment: the copy beside the
// directory (log.MANIFEST) still names it (issue 33, N13).
TEST(FileUpdateLogDamage, DeletedManifestAndNewestSegment) {
  const std::string dir = WriteLog(10, {5});
  OpenLog(Env::Default(), dir);  // a restart: the high-water mark is now 10
  ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/MANIFEST").ok());
  ASSERT_TRUE(Env::Default()->RemoveFile(dir + "/" + Segment(6)).ok());
  ExpectDataLoss(dir,
                 "log/00000000000000000006.log is missing (log.MANIFEST names it as the newest "
                 "segment): records 6 to at least 10 follow the damage");
}

}  // namespace
}  // namespace clickd
