// A budgeted durable model restarts to the same state: evictions are a
// function of the state and the steps, so a snapshot plus the replay of
// the log after it evicts exactly what the live model evicted (the same
// holds for every replica of a replicated log and for an offline replay).
#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "core/persist/memory_update_log.h"
#include "core/persist/model_journal.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/budget_journal_test_" +
                          std::to_string(getpid()) + "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);
  return dir;
}

// Batches of a user context and three ads, nearly every id new, so that a
// 64 KiB budget evicts all along.
struct Batches {
  std::deque<Example> examples;
  std::vector<std::vector<TrainingExample>> batches;
};

Batches MakeBatches(int n, uint32_t seed) {
  Batches out;
  std::mt19937 rng(seed);
  for (int b = 0; b < n; ++b) {
    std::vector<TrainingExample> batch;
    Example& ctx = out.examples.emplace_back();
    ctx.namespaces.push_back(
        {"user", {Feature::WithId(rng() % 1'000'000), Feature::Named("geo=fr")}});
    for (int c = 0; c < 3; ++c) {
      Example& ad = out.examples.emplace_back();
      const uint64_t id = rng() % 1'000'000;
      ad.namespaces.push_back({"ad", {Feature::WithId(id), Feature::WithId(id % 7 + 2'000'000)}});
      batch.push_back({&ctx, &ad, (id % 7 < 2) ? 1.0f : 0.0f, 1.0f});
    }
    out.batches.push_back(batch);
  }
  return out;
}

void Crash(std::unique_ptr<ModelJournal> journal) {
  static auto* abandoned = new std::vector<std::unique_ptr<ModelJournal>>();
  abandoned->push_back(std::move(journal));
}

class BudgetJournal : public ::testing::TestWithParam<bool> {
 protected:
  JournalOptions Options() const {
    JournalOptions options;
    if (GetParam()) options.open_log = memory_logs_;
    return options;
  }

 private:
  const UpdateLogOpener memory_logs_ = MemoryUpdateLog::Opener();
};

INSTANTIATE_TEST_SUITE_P(, BudgetJournal, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "MemoryLog" : "FileLog";
                         });

TEST_P(BudgetJournal, RestartFromSnapshotAndReplayRebuildsTheSameModel) {
  ModelConfig config;
  config.name = "ctr";
  config.hashing.interactions = {{"user", "ad"}};
  config.memory.max_bytes = 64 << 10;
  const Batches data = MakeBatches(1200, 11);
  const std::string dir = NewDir();
  const JournalOptions options = Options();
  std::string live;
  uint64_t evicted_at_snapshot = 0;
  uint64_t evicted = 0;
  {
    auto journal = *ModelJournal::Create(dir, config, options);
    auto model = *CreateModel(config);
    for (int i = 0; i < 600; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    evicted_at_snapshot = model->Stats().coordinates_evicted;
    ASSERT_TRUE(journal->Snapshot(*model).ok());
    for (int i = 600; i < 1200; ++i) ASSERT_TRUE(journal->Learn(*model, data.batches[i]).ok());
    live = StateDigest(*model);
    evicted = model->Stats().coordinates_evicted;
    EXPECT_LE(model->Stats().bytes, config.memory.max_bytes);
    Crash(std::move(journal));
  }
  // Evictions before the snapshot and in the replayed part.
  ASSERT_GT(evicted_at_snapshot, 0u);
  ASSERT_GT(evicted, evicted_at_snapshot);
  auto opened = ModelJournal::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->model->config().memory.max_bytes, config.memory.max_bytes);
  EXPECT_EQ(StateDigest(*opened->model), live);
  // The replay evicted what the live model evicted after the snapshot.
  EXPECT_EQ(opened->model->Stats().coordinates_evicted, evicted - evicted_at_snapshot);
  // And an offline replay of every batch from scratch agrees.
  auto offline = *CreateModel(config);
  for (const auto& batch : data.batches) LearnBatch(*offline, batch);
  EXPECT_EQ(StateDigest(*offline), live);
}

}  // namespace
}  // namespace clickd
