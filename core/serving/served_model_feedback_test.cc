// The impression-to-click loop of a durable served model: its records go
// through the update log and its join buffer into snapshots, so a restart
// (newest snapshot + log replay) rebuilds the same model and the same loop.
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/feedback/impressions.h"
#include "core/persist/fault_injection_env.h"
#include "core/persist/model_journal.h"
#include "core/persist/snapshot.h"
#include "core/serving/served_model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr int64_t kSecond = 1'000'000;

std::string NewDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/served_feedback_test_" +
                          std::to_string(getpid()) + "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);
  return dir;
}

ModelConfig Config(FeedbackConfig::Policy policy) {
  ModelConfig config;
  config.name = "loop";
  config.hashing.interactions = {{"ctx", "ad"}};
  config.feedback.ttl_seconds = 10;
  config.feedback.policy = policy;
  return config;
}

// Moved by hand: the loop's records carry its readings.
struct WallClock {
  std::atomic<int64_t> now{1'700'000'000 * kSecond};
  WallClockMicros AsClock() {
    return [this] { return now.load(); };
  }
};

std::unique_ptr<ServedModel> Served(std::unique_ptr<Model> model,
                                    std::unique_ptr<ModelJournal> journal,
                                    std::unique_ptr<FeedbackLoop> loop, WallClock* clock,
                                    std::unique_ptr<IdempotencyWindow> window = nullptr) {
  return std::make_unique<ServedModel>(std::move(model), std::move(journal), RecoveryReport{},
                                       nullptr, SteadyNow, std::move(loop), clock->AsClock(),
                                       std::move(window));
}

// Scores `ads` candidates under one context and logs them.
absl::StatusOr<uint64_t> PredictAndLog(ServedModel& served, int round, int ads) {
  const Model& model = served.model();
  Example context;
  context.namespaces.push_back({"ctx", {Feature::Named("user=" + std::to_string(round % 7))}});
  HashedCandidates hashed;
  model.hasher().HashContext(context, &hashed.context);
  std::vector<HashedFeature> part;
  for (int i = 0; i < ads; ++i) {
    Example ad;
    ad.namespaces.push_back({"ad", {Feature::WithId((round * 3 + i) % 11)}});
    part.clear();
    model.hasher().HashCandidate(hashed.context, ad, &part);
    hashed.features.insert(hashed.features.end(), part.begin(), part.end());
    hashed.ends.push_back(hashed.features.size());
  }
  const std::vector<CandidateScore> scores = ScoreCandidates(model, hashed);
  PredictImpressions impressions;
  BuildImpressions(model, hashed, scores, &impressions);
  return served.LogImpressions(impressions.views);
}

// Drives a mix of impressions, clicks, ticks and snapshots.
void Drive(ServedModel& served, WallClock& clock, int rounds, bool snapshot_midway) {
  for (int round = 0; round < rounds; ++round) {
    clock.now += kSecond;
    auto first = PredictAndLog(served, round, 3);
    ASSERT_TRUE(first.ok()) << first.status();
    if (round % 2 == 0) {
      const FeedbackItem click[] = {{*first + round % 3, 1.0f, 1.0f, clock.now.load()}};
      ASSERT_TRUE(served.ApplyFeedback(click).ok());
    }
    if (round % 5 == 4) {
      ASSERT_TRUE(served.ExpireImpressions().ok());
    }
    if (snapshot_midway && round == rounds / 2) {
      ASSERT_TRUE(served.Snapshot().ok());
    }
  }
}

class ServedModelFeedback : public ::testing::TestWithParam<FeedbackConfig::Policy> {};

TEST_P(ServedModelFeedback, RestartRebuildsTheModelAndTheLoop) {
  for (bool snapshot : {false, true}) {
    SCOPED_TRACE(snapshot ? "snapshot + log" : "log only");
    const std::string dir = NewDir();
    const ModelConfig config = Config(GetParam());
    WallClock clock;
    auto journal = ModelJournal::Create(dir, config, JournalOptions{});
    ASSERT_TRUE(journal.ok()) << journal.status();
    auto served = Served(*CreateModel(config), *std::move(journal), nullptr, &clock);
    Drive(*served, clock, 40, snapshot);
    const std::string state = served->model().SerializeState();
    const std::string loop = served->feedback()->EncodeState();
    const FeedbackCounters counters = served->feedback_counters();
    EXPECT_EQ(counters.impressions, 120u);
    EXPECT_EQ(counters.joined, 20u);
    EXPECT_GT(counters.expired, 0u);
    served.reset();

    auto opened = ModelJournal::Open(dir, JournalOptions{});
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_NE(opened->feedback, nullptr);
    EXPECT_EQ(opened->report.snapshot_sequence > 0, snapshot);
    EXPECT_EQ(opened->model->SerializeState(), state);
    EXPECT_EQ(opened->feedback->EncodeState(), loop);
    // It goes on: the next ids follow the last ones issued.
    auto restored = Served(std::move(opened->model), std::move(opened->journal),
                           std::move(opened->feedback), &clock);
    const uint64_t next = restored->feedback()->buffer().Stats().next_id;
    auto first = PredictAndLog(*restored, 99, 2);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(*first, next);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, ServedModelFeedback,
                         ::testing::Values(FeedbackConfig::Policy::kWaitNegative,
                                           FeedbackConfig::Policy::kWaitDrop,
                                           FeedbackConfig::Policy::kFakeNegative,
                                           FeedbackConfig::Policy::kFakeNegativeWeighted),
                         [](const auto& info) {
                           return std::string(FeedbackPolicyName(info.param));
                         });

TEST(ServedModelFeedbackSnapshot, FormatFourHoldsTheJoinBufferAndRefusesDamage) {
  const std::string dir = NewDir();
  const ModelConfig config = Config(FeedbackConfig::Policy::kWaitNegative);
  WallClock clock;
  auto served = Served(*CreateModel(config), *ModelJournal::Create(dir, config, JournalOptions{}),
                       nullptr, &clock);
  Drive(*served, clock, 6, false);
  auto report = served->Snapshot();
  ASSERT_TRUE(report.ok()) << report.status();
  auto contents = ReadSnapshot(Env::Default(), report->path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->feedback, served->feedback()->EncodeState());
  const std::string bytes = EncodeSnapshot(*contents);
  EXPECT_EQ(bytes[8], 4);  // the format version follows the 8-byte magic
  // Every cut, and a flip in the join buffer's section (it comes last,
  // before the 20-byte footer), is refused.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_FALSE(DecodeSnapshot(bytes.substr(0, n)).ok()) << n;
  }
  std::string flipped = bytes;
  flipped[bytes.size() - 30] ^= 0x4;
  EXPECT_EQ(DecodeSnapshot(flipped).status().code(), absl::StatusCode::kDataLoss);
}

TEST(ServedModelFeedbackMemory, WithoutALoopTheCallsAreRefused) {
  WallClock clock;
  auto served = Served(*CreateModel(ModelConfig{}), nullptr, nullptr, &clock);
  EXPECT_EQ(served->feedback(), nullptr);
  const FeedbackItem item[] = {{1, 1.0f, 1.0f, 0}};
  EXPECT_EQ(served->ApplyFeedback(item).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(served->ExpireImpressions().ok());
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// An Update and a Feedback under idempotency keys: a retry within the
// window is a duplicate, before and after a restart (by log replay, and
// from a snapshot, which holds the keys).
TEST(ServedModelIdempotency, RetriesAreDuplicatesAcrossRestarts) {
  const ModelConfig config = Config(FeedbackConfig::Policy::kWaitNegative);
  for (bool snapshot : {false, true}) {
    SCOPED_TRACE(snapshot ? "snapshot" : "log");
    const std::string dir = NewDir();
    WallClock clock;
    auto served = Served(*CreateModel(config), *ModelJournal::Create(dir, config, JournalOptions{}),
                         nullptr, &clock);
    Example example;
    example.namespaces.push_back({"ad", {Feature::WithId(3)}});
    const TrainingExample batch[] = {{nullptr, &example, 1.0f, 1.0f}};
    auto first = served->Learn(batch, "update-1");
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->duplicate);
    EXPECT_EQ(first->scored.size(), 1u);
    auto again = served->Learn(batch, "update-1");
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->duplicate);
    EXPECT_TRUE(again->scored.empty());
    EXPECT_EQ(served->model().Updates(), 1u);

    auto id = PredictAndLog(*served, 0, 1);
    ASSERT_TRUE(id.ok());
    const FeedbackItem click[] = {{*id, 1.0f, 1.0f, 0}};
    bool duplicate = true;
    ASSERT_TRUE(served->ApplyFeedback(click, "fb-1", &duplicate).ok());
    EXPECT_FALSE(duplicate);
    auto outcomes = served->ApplyFeedback(click, "fb-1", &duplicate);
    ASSERT_TRUE(outcomes.ok());
    EXPECT_TRUE(duplicate);
    EXPECT_TRUE(outcomes->empty());
    if (snapshot) {
      ASSERT_TRUE(served->Snapshot().ok());
    }
    const std::string state = served->model().SerializeState();
    served.reset();

    auto opened = ModelJournal::Open(dir, JournalOptions{});
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_EQ(opened->idempotency->size(), 2u);
    auto restored = Served(std::move(opened->model), std::move(opened->journal),
                           std::move(opened->feedback), &clock, std::move(opened->idempotency));
    EXPECT_EQ(restored->model().SerializeState(), state);
    auto retried = restored->Learn(batch, "update-1");
    ASSERT_TRUE(retried.ok());
    EXPECT_TRUE(retried->duplicate);
    ASSERT_TRUE(restored->ApplyFeedback(click, "fb-1", &duplicate).ok());
    EXPECT_TRUE(duplicate);
    // Past the window (10 minutes by default), the key is new again.
    clock.now += 601 * kSecond;
    auto later = restored->Learn(batch, "update-1");
    ASSERT_TRUE(later.ok());
    EXPECT_FALSE(later->duplicate);
    EXPECT_EQ(restored->model().Updates(), 3u);  // two learned, then this
  }
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// A full disk: the loop's records (and a keyed Update's) cannot be logged,
// so they are refused and change nothing: no id spent, no key remembered,
// no step taken; the restart after it rebuilds the state from before.
TEST(ServedModelFeedbackFullDisk, RefusedRecordsChangeNothing) {
  const std::string dir = NewDir();
  const ModelConfig config = Config(FeedbackConfig::Policy::kFakeNegativeWeighted);
  FaultInjectionEnv env(Env::Default());
  JournalOptions options;
  options.env = &env;
  WallClock clock;
  auto served =
      Served(*CreateModel(config), *ModelJournal::Create(dir, config, options), nullptr, &clock);
  auto first = PredictAndLog(*served, 0, 2);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string state = served->model().SerializeState();
  const std::string loop = served->feedback()->EncodeState();

  env.SetWriteBudget(0);  // the disk is full
  EXPECT_FALSE(PredictAndLog(*served, 1, 2).ok());
  const FeedbackItem click[] = {{*first, 1.0f, 1.0f, 0}};
  bool duplicate = false;
  EXPECT_FALSE(served->ApplyFeedback(click, "click-1", &duplicate).ok());
  Example example;
  example.namespaces.push_back({"ad", {Feature::WithId(3)}});
  const TrainingExample batch[] = {{nullptr, &example, 1.0f, 1.0f}};
  EXPECT_FALSE(served->Learn(batch, "update-1").ok());
  EXPECT_EQ(served->model().SerializeState(), state);
  EXPECT_EQ(served->feedback()->EncodeState(), loop);
  EXPECT_EQ(served->idempotency().size(), 0u);
  EXPECT_EQ(served->feedback_counters().refused_full, 0u);  // the disk, not the buffer

  served.reset();
  env.SetWriteBudget(-1);
  auto opened = ModelJournal::Open(dir, JournalOptions{});
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->model->SerializeState(), state);
  EXPECT_EQ(opened->feedback->EncodeState(), loop);
  EXPECT_EQ(opened->idempotency->size(), 0u);
}

}  // namespace
}  // namespace clickd
