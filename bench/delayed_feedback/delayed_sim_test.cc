#include "bench/delayed_feedback/delayed_sim.h"

#include <cmath>
#include <map>
#include <random>

#include "core/feedback/delayed_feedback.h"
#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd::delayed {
namespace {

constexpr double kInterval = 10;

// A small log whose clicks depend on its features, so a model learns
// something and the strategies' models differ.
ClickLog SmallLog(size_t n) {
  std::mt19937_64 rng(7);
  ClickLog log;
  std::vector<HashedFeature> f;
  for (size_t i = 0; i < n; ++i) {
    f.clear();
    const uint64_t a = rng() % 20, b = rng() % 50;
    f.push_back({a + 1, 1.0f});
    f.push_back({1000 + b, 1.0f});
    f.push_back({999999, 1.0f});  // bias
    log.Add(f, rng() % 100 < 5 + 2 * a);
  }
  return log;
}

std::unique_ptr<Model> NewModel() { return *CreateModel(ModelConfig{}); }

struct SimRun {
  SimResult result;
  std::vector<LearnStep> trace;
  std::string state;
};

SimRun Simulated(const ClickLog& log, const std::vector<double>& delays,
                 const SimOptions& options) {
  auto model = NewModel();
  SimRun run;
  run.result = Simulate(log, delays, options, model.get(), &run.trace);
  run.state = model->SerializeState();
  return run;
}

SimOptions Options(Strategy s, double ttl, double cutoff) {
  SimOptions o;
  o.strategy = s;
  o.interval = kInterval;
  o.ttl = ttl;
  o.cutoff = cutoff;
  return o;
}

const Strategy kAll[] = {Strategy::kOracle, Strategy::kWaitForTtl, Strategy::kFakeNegative,
                         Strategy::kFnw};

TEST(DelayedSimTest, EventsAreInTimeOrderAndComplete) {
  const ClickLog log = SmallLog(500);
  const std::vector<double> delays =
      DrawDelays(log, {.kind = DelayKind::kExponential, .mean = 300}, 1);
  const SimOptions o = Options(Strategy::kWaitForTtl, 200, 900);
  const std::vector<Event> events = BuildEvents(delays, o);
  size_t clicks = 0;
  for (size_t i = 0; i < log.size(); ++i) clicks += FinalLabel(delays[i], o.cutoff);
  EXPECT_EQ(events.size(), 2 * log.size() + clicks);
  for (size_t k = 1; k < events.size(); ++k) EXPECT_LE(events[k - 1].time, events[k].time);
}

// Each learning step happens at its event's time, and steps never go back
// in time: the simulator processes events in time order.
TEST(DelayedSimTest, LearningStepsFollowTheClock) {
  const ClickLog log = SmallLog(800);
  const std::vector<double> delays =
      DrawDelays(log, {.kind = DelayKind::kLogNormal, .mu = 4, .sigma = 1.5}, 2);
  const double ttl = 120, cutoff = 2000;
  for (Strategy s : kAll) {
    const SimRun run = Simulated(log, delays, Options(s, ttl, cutoff));
    for (size_t k = 0; k < run.trace.size(); ++k) {
      const LearnStep& step = run.trace[k];
      if (k > 0) {
        EXPECT_LE(run.trace[k - 1].time, step.time) << StrategyName(s);
      }
      const double impression = step.index * kInterval;
      double expected = impression;
      if (s == Strategy::kWaitForTtl) {
        expected = step.label > 0 ? impression + delays[step.index] : impression + ttl;
      } else if (s != Strategy::kOracle && step.label > 0) {
        expected = impression + delays[step.index];
      }
      ASSERT_EQ(step.time, expected) << StrategyName(s) << " step " << k;
    }
  }
}

// With every click at once and expiries before the next impression, waiting
// learns exactly what the oracle learns, in the same order.
TEST(DelayedSimTest, ZeroDelaysMakeWaitingTheOracle) {
  const ClickLog log = SmallLog(1000);
  std::vector<double> delays(log.size(), kNever);
  for (size_t i = 0; i < log.size(); ++i) {
    if (log.clicked[i]) delays[i] = 0;
  }
  const SimRun oracle = Simulated(log, delays, Options(Strategy::kOracle, 0, 100));
  for (double ttl : {0.0, kInterval / 2}) {
    const SimRun wait = Simulated(log, delays, Options(Strategy::kWaitForTtl, ttl, 100));
    EXPECT_EQ(wait.state, oracle.state) << "ttl " << ttl;
    EXPECT_EQ(wait.result.margins, oracle.result.margins) << "ttl " << ttl;
  }
  // A TTL of several impressions delays the negatives: another model.
  const SimRun late = Simulated(log, delays, Options(Strategy::kWaitForTtl, 3 * kInterval, 100));
  EXPECT_NE(late.state, oracle.state);
}

TEST(DelayedSimTest, FnwWithZeroProbabilityIsTheUncorrectedMethod) {
  const ClickLog log = SmallLog(1000);
  const std::vector<double> delays =
      DrawDelays(log, {.kind = DelayKind::kExponential, .mean = 100}, 3);
  const SimRun fake = Simulated(log, delays, Options(Strategy::kFakeNegative, 0, 700));
  SimOptions o = Options(Strategy::kFnw, 0, 700);
  o.fnw_use_model_p = false;
  EXPECT_EQ(Simulated(log, delays, o).state, fake.state);
  o.fnw_use_model_p = true;
  EXPECT_NE(Simulated(log, delays, o).state, fake.state);
}

// FNW's weights use the model's probability just before each step: for the
// fake negative, the probability scored at the impression.
TEST(DelayedSimTest, FnwWeightsUseThePreStepProbability) {
  const ClickLog log = SmallLog(600);
  const std::vector<double> delays =
      DrawDelays(log, {.kind = DelayKind::kExponential, .mean = 100}, 4);
  const SimRun run = Simulated(log, delays, Options(Strategy::kFnw, 0, 700));
  for (const LearnStep& step : run.trace) {
    if (step.label > 0) {
      EXPECT_GE(step.importance, 1.0);
      EXPECT_LE(step.importance, 2.0);
    } else {
      EXPECT_DOUBLE_EQ(step.importance, FnwNegativeWeight(Sigmoid(run.result.margins[step.index])));
    }
  }
}

// Every click that arrives is learned as a positive exactly once (wait: if
// within the TTL); clicks after the cutoff never; every impression gets
// exactly one negative or final label.
TEST(DelayedSimTest, EachClickIsLearnedOnceAndLateClicksNever) {
  const ClickLog log = SmallLog(1500);
  const std::vector<double> delays =
      DrawDelays(log, {.kind = DelayKind::kExponential, .mean = 400}, 5);
  const double ttl = 300, cutoff = 500;
  size_t beyond_cutoff = 0;
  for (double d : delays) beyond_cutoff += (d != kNever && d > cutoff);
  ASSERT_GT(beyond_cutoff, 5u);  // the check below has something to catch
  for (Strategy s : kAll) {
    const SimRun run = Simulated(log, delays, Options(s, ttl, cutoff));
    std::map<uint32_t, int> positives, negatives;
    for (const LearnStep& step : run.trace) ++(step.label > 0 ? positives : negatives)[step.index];
    for (uint32_t i = 0; i < log.size(); ++i) {
      const bool arrives = FinalLabel(delays[i], cutoff);
      const bool learned_click = s == Strategy::kWaitForTtl ? arrives && delays[i] <= ttl : arrives;
      EXPECT_EQ(positives[i], learned_click ? 1 : 0) << StrategyName(s) << " impression " << i;
      const bool negative =
          s == Strategy::kOracle || s == Strategy::kWaitForTtl ? !learned_click : true;
      EXPECT_EQ(negatives[i], negative ? 1 : 0) << StrategyName(s) << " impression " << i;
    }
    if (s == Strategy::kWaitForTtl) {
      size_t lost = 0;
      for (double d : delays) lost += (d > ttl && d <= cutoff);
      EXPECT_EQ(run.result.lost_clicks, lost);
    }
  }
}

TEST(DelayedSimTest, DelaysAreSeededAndOnlyForClicks) {
  const ClickLog log = SmallLog(3000);
  const DelayParams p{.kind = DelayKind::kExponential, .mean = 50};
  const std::vector<double> a = DrawDelays(log, p, 9), b = DrawDelays(log, p, 9);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, DrawDelays(log, p, 10));
  double sum = 0;
  size_t clicks = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (!log.clicked[i]) {
      EXPECT_EQ(a[i], kNever);
      continue;
    }
    ASSERT_TRUE(std::isfinite(a[i]) && a[i] >= 0);
    sum += a[i];
    ++clicks;
  }
  ASSERT_GT(clicks, 200u);
  EXPECT_NEAR(sum / clicks, 50, 10);  // standard error ~ 50 / sqrt(clicks) < 3.6
  EXPECT_NEAR(MeanDelay({.kind = DelayKind::kLogNormal, .mu = 1, .sigma = 2}), std::exp(3), 1e-9);
}

}  // namespace
}  // namespace clickd::delayed
