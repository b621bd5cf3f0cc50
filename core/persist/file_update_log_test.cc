#include "core/persist/file_update_log.h"

#include <atomic>
#include <filesystem>
#include <thread>

#include "core/persist/fault_injection_env.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/update_log_test_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);  // PIDs repeat across runs
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

}  // namespace
}  // namespace clickd
