// The UpdateLog contract (update_log.h), checked on MemoryUpdateLog and, so
// that the two are held to the same rules, on FileUpdateLog; then what only
// MemoryUpdateLog's opener does.
#include "core/persist/memory_update_log.h"

#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/persist/env.h"
#include "core/persist/file_update_log.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// A fresh directory: PIDs repeat across runs, and /tmp may hold an old one.
std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/memory_log_test_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
  // PIDs repeat across runs: a directory of an earlier run, and the copy
  // of a file log's MANIFEST kept beside it (`<dir>.MANIFEST`), go first.
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".MANIFEST");
  std::filesystem::remove(dir + ".MANIFEST.tmp");
  return dir;
}

using Records = std::vector<std::pair<uint64_t, std::string>>;

Records ReadAll(UpdateLog& log, uint64_t after = 0) {
  Records out;
  const absl::Status s = log.ReadAfter(after, [&](uint64_t sequence, std::string_view record) {
    out.emplace_back(sequence, std::string(record));
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// Appends "r<sequence>" records until the log's last sequence is `last`.
void AppendThrough(UpdateLog& log, uint64_t last) {
  while (log.last_sequence() < last) {
    auto sequence = log.Append(absl::StrCat("r", log.last_sequence() + 1));
    ASSERT_TRUE(sequence.ok()) << sequence.status();
  }
}

enum class LogKind { kMemory, kFile };

class UpdateLogContract : public ::testing::TestWithParam<LogKind> {
 protected:
  // A new, empty log of the kind under test.
  std::unique_ptr<UpdateLog> NewLog() {
    if (GetParam() == LogKind::kMemory) return std::make_unique<MemoryUpdateLog>();
    auto log = FileUpdateLog::Open(Env::Default(), NewDir(), {}, nullptr);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }
};

INSTANTIATE_TEST_SUITE_P(, UpdateLogContract, ::testing::Values(LogKind::kMemory, LogKind::kFile),
                         [](const ::testing::TestParamInfo<LogKind>& info) {
                           return info.param == LogKind::kMemory ? "Memory" : "File";
                         });

TEST_P(UpdateLogContract, SequencesAreConsecutiveFromOne) {
  auto log = NewLog();
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 0u);
  EXPECT_EQ(log->size_bytes(), 0u);
  EXPECT_EQ(*log->Append("a"), 1u);
  EXPECT_EQ(*log->Append(""), 2u);
  EXPECT_EQ(*log->Append(std::string(1000, 'x')), 3u);
  EXPECT_TRUE(log->WaitDurable(3).ok());
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_GE(log->size_bytes(), 1001u);
  EXPECT_EQ(ReadAll(*log), (Records{{1, "a"}, {2, ""}, {3, std::string(1000, 'x')}}));
}

TEST_P(UpdateLogContract, ReadAfterVisitsLaterRecordsInOrderAndStopsAtAnError) {
  auto log = NewLog();
  AppendThrough(*log, 5);
  EXPECT_EQ(ReadAll(*log, 2), (Records{{3, "r3"}, {4, "r4"}, {5, "r5"}}));
  EXPECT_TRUE(ReadAll(*log, 5).empty());
  EXPECT_TRUE(ReadAll(*log, 9).empty());
  int calls = 0;
  const absl::Status s = log->ReadAfter(0, [&](uint64_t sequence, std::string_view) {
    ++calls;
    // Without the log's lock: calling into the log does not deadlock.
    EXPECT_EQ(log->last_sequence(), 5u);
    return sequence == 2 ? absl::DataLossError("stop") : absl::OkStatus();
  });
  EXPECT_EQ(s, absl::DataLossError("stop"));
  EXPECT_EQ(calls, 2);
}

TEST_P(UpdateLogContract, TruncateThroughDropsOnlyOldRecordsAndKeepsTheSequence) {
  auto log = NewLog();
  AppendThrough(*log, 6);
  ASSERT_TRUE(log->TruncateThrough(4).ok());
  EXPECT_EQ(log->last_sequence(), 6u);
  // Some of 1..4 may stay (the file log drops whole segments), 5 and 6 do.
  const Records kept = ReadAll(*log);
  ASSERT_GE(kept.size(), 2u);
  EXPECT_EQ(kept.front().first, log->first_sequence());
  EXPECT_EQ(kept.back(), (std::pair<uint64_t, std::string>{6, "r6"}));
  for (size_t i = 1; i < kept.size(); ++i) EXPECT_EQ(kept[i].first, kept[i - 1].first + 1);
  EXPECT_EQ(*log->Append("r7"), 7u);

  // Everything, and past the end: the log is empty but does not start over.
  ASSERT_TRUE(log->TruncateThrough(100).ok());
  EXPECT_EQ(log->last_sequence(), 7u);
  EXPECT_EQ(log->first_sequence(), 8u);
  EXPECT_EQ(log->size_bytes(), 0u);
  EXPECT_TRUE(ReadAll(*log).empty());
  EXPECT_EQ(*log->Append("r8"), 8u);
  EXPECT_EQ(log->first_sequence(), 8u);
  EXPECT_EQ(ReadAll(*log), (Records{{8, "r8"}}));
}

TEST_P(UpdateLogContract, ResetAfterRefusesALogWithLaterRecords) {
  auto log = NewLog();
  AppendThrough(*log, 3);
  const absl::Status refused = log->ResetAfter(2);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("holds records after 2"), std::string::npos) << refused;
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_EQ(ReadAll(*log).size(), 3u);
}

TEST_P(UpdateLogContract, ResetAfterContinuesAfterTheSequence) {
  auto log = NewLog();
  AppendThrough(*log, 3);
  ASSERT_TRUE(log->ResetAfter(3).ok());  // at its last record: drops them
  EXPECT_EQ(log->first_sequence(), 4u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_TRUE(ReadAll(*log).empty());
  ASSERT_TRUE(log->ResetAfter(20).ok());
  EXPECT_EQ(log->first_sequence(), 21u);
  EXPECT_EQ(log->last_sequence(), 20u);
  EXPECT_EQ(log->size_bytes(), 0u);
  EXPECT_EQ(*log->Append("r21"), 21u);
  EXPECT_EQ(ReadAll(*log), (Records{{21, "r21"}}));
  EXPECT_EQ(ReadAll(*log, 20), (Records{{21, "r21"}}));

  auto fresh = NewLog();
  ASSERT_TRUE(fresh->ResetAfter(8).ok());
  EXPECT_EQ(*fresh->Append("r9"), 9u);
}

TEST_P(UpdateLogContract, ConcurrentAppendsGetEverySequenceOnce) {
  auto log = NewLog();
  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto sequence = log->Append(absl::StrCat("t", t, "-", i));
        ASSERT_TRUE(sequence.ok()) << sequence.status();
        got[t].push_back(*sequence);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<bool> seen(kThreads * kEach + 1, false);
  for (const auto& sequences : got) {
    for (uint64_t sequence : sequences) {
      ASSERT_TRUE(sequence >= 1 && sequence <= kThreads * kEach) << sequence;
      EXPECT_FALSE(seen[sequence]) << sequence;
      seen[sequence] = true;
    }
  }
  const Records all = ReadAll(*log);
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].first, i + 1);
}

// What only the memory log's opener does.

TEST(MemoryUpdateLog, OpenerKeepsEachDirectorysRecordsAcrossReopens) {
  Env* env = Env::Default();
  const UpdateLogOpener open = MemoryUpdateLog::Opener();
  const std::string a = NewDir(), b = NewDir();
  {
    auto log = open(env, a, {}, nullptr, {});
    ASSERT_TRUE(log.ok()) << log.status();
    AppendThrough(**log, 4);
    ASSERT_TRUE((*log)->TruncateThrough(1).ok());
  }
  EXPECT_TRUE(env->FileExists(a));  // created, as the file log creates it
  UpdateLogRecovery recovery;
  recovery.torn_tail_bytes = 7;  // reset by the opener
  auto again = open(env, a, {}, &recovery, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(recovery.records, 3u);
  EXPECT_EQ(recovery.torn_tail_bytes, 0u);
  EXPECT_EQ((*again)->first_sequence(), 2u);
  EXPECT_EQ(ReadAll(**again), (Records{{2, "r2"}, {3, "r3"}, {4, "r4"}}));
  EXPECT_EQ(*(*again)->Append("r5"), 5u);

  auto other = open(env, b, {}, nullptr, {});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ((*other)->last_sequence(), 0u);
  // Another opener keeps its own logs.
  auto elsewhere = MemoryUpdateLog::Opener()(env, a, {}, nullptr, {});
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ((*elsewhere)->last_sequence(), 0u);
}

TEST(MemoryUpdateLog, ADirectoryThatWentStartsOverEmpty) {
  Env* env = Env::Default();
  const UpdateLogOpener open = MemoryUpdateLog::Opener();
  const std::string dir = NewDir();
  {
    auto log = open(env, dir, {}, nullptr, {});
    ASSERT_TRUE(log.ok()) << log.status();
    AppendThrough(**log, 3);
  }
  ASSERT_TRUE(env->RemoveDir(dir).ok());
  auto log = open(env, dir, {}, nullptr, {});
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ((*log)->first_sequence(), 1u);
  EXPECT_EQ((*log)->last_sequence(), 0u);
  EXPECT_TRUE(ReadAll(**log).empty());
}

}  // namespace
}  // namespace clickd
