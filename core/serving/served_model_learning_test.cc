// The learning path (docs/architecture.md, "The learning path"): every
// batch, keyed or not, local or replicated, memory-only or durable, learns
// the same bits, and a key is checked and remembered once under the model's
// one write lock.
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/model/state_digest.h"
#include "core/persist/batch_codec.h"
#include "core/persist/feedback_codec.h"
#include "core/persist/model_journal.h"
#include "core/serving/served_model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr int64_t kNowUs = 1'700'000'000'000'000;

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/served_learning_test_" +
                          std::to_string(getpid()) + "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);
  return dir;
}

ModelConfig Config() {
  ModelConfig config;
  config.name = "path";
  config.hashing.interactions = {{"ctx", "ad"}};
  return config;
}

std::unique_ptr<ServedModel> Served(std::unique_ptr<ModelJournal> journal) {
  auto model = CreateModel(Config());
  EXPECT_TRUE(model.ok()) << model.status();
  return std::make_unique<ServedModel>(*std::move(model), std::move(journal), RecoveryReport{},
                                       nullptr, SteadyNow, nullptr, [] { return kNowUs; });
}

// Batch i: 20 examples with a shared context, labels and features from i.
struct Batches {
  explicit Batches(int n) {
    contexts.resize(n);
    examples.resize(n * 20);
    for (int i = 0; i < n; ++i) {
      contexts[i].namespaces.push_back({"ctx", {Feature::Named("u" + std::to_string(i % 3))}});
      std::vector<TrainingExample>& batch = batches.emplace_back();
      for (int j = 0; j < 20; ++j) {
        Example& e = examples[i * 20 + j];
        e.namespaces.push_back({"ad",
                                {Feature::Named("a" + std::to_string((i * 7 + j) % 11)),
                                 Feature::WithId(static_cast<uint64_t>(j))}});
        batch.push_back({&contexts[i], &e, (i + j) % 4 == 0 ? 1.0f : 0.0f, 1.0f});
      }
    }
  }
  std::vector<Example> contexts;
  std::vector<Example> examples;
  std::vector<std::vector<TrainingExample>> batches;
};

// The key of batch i: every other batch has none.
std::string KeyOf(int i) { return i % 2 == 0 ? "" : "key-" + std::to_string(i); }

// A writer's record of batch i, as the replicated log holds it.
std::string RecordOf(const Batches& data, int i) {
  std::string record;
  EncodeBatch(data.batches[i], &record);
  if (KeyOf(i).empty()) return record;
  std::string keyed;
  EncodeKeyed(kNowUs, KeyOf(i), record, &keyed);
  return keyed;
}

TEST(ServedModelLearningPath, EveryEntryLearnsTheSameBits) {
  const Batches data(12);
  auto memory = Served(nullptr);
  auto durable = Served(*ModelJournal::Create(NewDir(), Config(), JournalOptions{}));
  auto replica = Served(nullptr);
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE(i);
    auto m = memory->Learn(data.batches[i], KeyOf(i));
    auto d = durable->Learn(data.batches[i], KeyOf(i));
    auto r = replica->ApplyReplicated(RecordOf(data, i));
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(m->scored.size(), 20u);
    ASSERT_EQ(d->scored.size(), 20u);
    ASSERT_EQ(r->scored.size(), 20u);
    for (size_t j = 0; j < 20; ++j) {
      EXPECT_EQ(m->scored[j].margin, d->scored[j].margin);
      EXPECT_EQ(m->scored[j].margin, r->scored[j].margin);
    }
  }
  EXPECT_EQ(StateDigest(memory->model()), StateDigest(durable->model()));
  EXPECT_EQ(StateDigest(memory->model()), StateDigest(replica->model()));
  for (ServedModel* served : {memory.get(), durable.get(), replica.get()}) {
    EXPECT_EQ(served->update_examples(), 240u);
    EXPECT_EQ(served->CachedStats().updates, 240u);
    EXPECT_EQ(served->idempotency().size(), 6u);
    // A retry of a keyed batch is a duplicate wherever its key was learned
    // (a replica remembers the keys of the records it applied).
    auto retried = served->Learn(data.batches[1], KeyOf(1));
    ASSERT_TRUE(retried.ok());
    EXPECT_TRUE(retried->duplicate);
    EXPECT_TRUE(retried->scored.empty());
    EXPECT_EQ(served->CachedStats().updates, 240u);
  }
}

// Two callers send the same keyed batches at once, mixed with unkeyed ones:
// each key is learned once, by one of them, in a memory-only model and in a
// durable one alike.
TEST(ServedModelLearningPath, ConcurrentRetriesLearnEachKeyOnce) {
  const Batches data(40);
  for (bool durable : {false, true}) {
    SCOPED_TRACE(durable ? "durable" : "memory-only");
    auto served =
        Served(durable ? *ModelJournal::Create(NewDir(), Config(), JournalOptions{}) : nullptr);
    std::atomic<int> learned{0};
    std::atomic<int> duplicates{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 2; ++t) {
      callers.emplace_back([&] {
        for (int i = 0; i < 40; ++i) {
          const std::string key = i % 4 == 0 ? "" : "key-" + std::to_string(i);
          auto done = served->Learn(data.batches[i], key);
          ASSERT_TRUE(done.ok()) << done.status();
          (done->duplicate ? duplicates : learned).fetch_add(1);
          EXPECT_EQ(done->scored.size(), done->duplicate ? 0u : 20u);
        }
      });
    }
    for (std::thread& t : callers) t.join();
    // 10 unkeyed batches twice, 30 keyed batches once each.
    EXPECT_EQ(learned.load(), 50);
    EXPECT_EQ(duplicates.load(), 30);
    EXPECT_EQ(served->model().Updates(), 50u * 20u);
    EXPECT_EQ(served->update_examples(), 50u * 20u);
    EXPECT_EQ(served->idempotency().size(), 30u);
  }
}

}  // namespace
}  // namespace clickd
