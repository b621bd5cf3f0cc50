// ServedModel's monitoring state: the recent window runs on the injected
// clock, and the counters count.
#include "core/serving/served_model.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// A clock the test moves by hand.
class FakeClock {
 public:
  MonotonicClock AsClock() {
    return [this] { return std::chrono::steady_clock::time_point(now_.load()); };
  }
  void Advance(std::chrono::steady_clock::duration d) { now_ = now_.load() + d; }

 private:
  std::atomic<std::chrono::steady_clock::duration> now_{minutes(1000)};
};

std::unique_ptr<ServedModel> NewServedModel(MonotonicClock clock) {
  auto model = CreateModel(ModelConfig{});
  EXPECT_TRUE(model.ok()) << model.status();
  return std::make_unique<ServedModel>(*std::move(model), std::move(clock));
}

TEST(ServedModel, RecentWindowForgetsOldExamplesLifetimeDoesNot) {
  FakeClock clock;
  auto served = NewServedModel(clock.AsClock());
  served->RecordProgressive({{3.0f, 0.0f, 1.0f}, {-3.0f, 1.0f, 1.0f}});  // two bad predictions
  clock.Advance(minutes(5));
  served->RecordProgressive({{3.0f, 1.0f, 1.0f}, {-3.0f, 0.0f, 1.0f}});  // two good ones
  EXPECT_EQ(served->ProgressiveSummary().examples, 4u);
  EXPECT_EQ(served->RecentProgressiveSummary().examples, 4u);

  clock.Advance(minutes(6));  // the bad ones are 11 minutes old now
  const MetricsSummary recent = served->RecentProgressiveSummary();
  EXPECT_EQ(recent.examples, 2u);
  EXPECT_NEAR(recent.logloss, std::log1p(std::exp(-3.0)), 1e-6);
  EXPECT_DOUBLE_EQ(recent.auc, 1.0);
  EXPECT_EQ(served->ProgressiveSummary().examples, 4u);
  EXPECT_GT(served->ProgressiveSummary().logloss, recent.logloss);

  clock.Advance(minutes(10));
  EXPECT_EQ(served->RecentProgressiveSummary().examples, 0u);
  EXPECT_EQ(served->update_examples(), 4u);
}

TEST(ServedModel, CountsPredictionsAndExamplesFromManyThreads) {
  auto served = NewServedModel([] { return std::chrono::steady_clock::now(); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        served->RecordPredictions(3);
        served->RecordProgressive({{0.5f, 1.0f, 1.0f}});
        (void)served->RecentProgressiveSummary();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(served->predictions(), 12000u);
  EXPECT_EQ(served->update_examples(), 4000u);
  EXPECT_EQ(served->ProgressiveSummary().examples, 4000u);
  EXPECT_EQ(served->RecentProgressiveSummary().examples, 4000u);
}

// GetModel reads CachedStats instead of Model::Stats (which waits for
// learners' shard locks): it must be current after every learned batch.
TEST(ServedModel, CachedStatsFollowEveryLearnedBatch) {
  auto served = NewServedModel([] { return std::chrono::steady_clock::now(); });
  EXPECT_EQ(served->CachedStats().updates, 0u);
  EXPECT_EQ(served->CachedStats().coordinates, 0u);
  Example example;
  example.namespaces.push_back({"ad", {Feature::Named("a"), Feature::Named("b")}});
  const std::vector<TrainingExample> batch = {{nullptr, &example, 1.0f, 1.0f},
                                              {nullptr, &example, 0.0f, 1.0f}};
  ASSERT_TRUE(served->Learn(batch).ok());
  const ModelStats cached = served->CachedStats();
  const ModelStats live = served->model().Stats();
  EXPECT_EQ(cached.updates, 2u);
  EXPECT_EQ(cached.coordinates, live.coordinates);
  EXPECT_EQ(cached.bytes, live.bytes);
  EXPECT_EQ(cached.coordinates, 3u);  // a, b and the bias
}

}  // namespace
}  // namespace clickd
