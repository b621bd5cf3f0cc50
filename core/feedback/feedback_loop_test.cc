#include "core/feedback/feedback_loop.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/feedback/delayed_feedback.h"
#include "core/feedback/impressions.h"
#include "core/model/serving.h"
#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr int64_t kSecond = 1'000'000;

ModelConfig LoopConfig(FeedbackConfig::Policy policy, int64_t ttl_seconds = 10) {
  ModelConfig config;
  config.name = "loop";
  config.hashing.interactions = {{"ctx", "ad"}};
  config.feedback.ttl_seconds = ttl_seconds;
  config.feedback.policy = policy;
  return config;
}

std::unique_ptr<Model> NewModel(const ModelConfig& config) {
  auto model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

Example MakeExample(const std::string& ns, std::vector<std::string> names) {
  Example e;
  Namespace n;
  n.name = ns;
  for (std::string& name : names) n.features.push_back(Feature::Named(std::move(name), 1.0f));
  e.namespaces.push_back(std::move(n));
  return e;
}

// A Predict's context and candidates, hashed and scored as the server does.
struct Scored {
  Example context;
  std::vector<Example> candidates;
  HashedCandidates hashed;
  std::vector<CandidateScore> scores;
  PredictImpressions impressions;
};

void Score(const Model& model, Scored* s) {
  const FeatureHasher& hasher = model.hasher();
  s->hashed.Clear();
  hasher.HashContext(s->context, &s->hashed.context);
  std::vector<HashedFeature> part;
  for (const Example& candidate : s->candidates) {
    part.clear();
    hasher.HashCandidate(s->hashed.context, candidate, &part);
    s->hashed.features.insert(s->hashed.features.end(), part.begin(), part.end());
    s->hashed.ends.push_back(s->hashed.features.size());
  }
  s->scores = ScoreCandidates(model, s->hashed);
  BuildImpressions(model, s->hashed, s->scores, &s->impressions);
}

Scored ThreeAds() {
  Scored s;
  s.context = MakeExample("ctx", {"site=a", "hour=3"});
  for (const char* ad : {"ad=1", "ad=2", "ad=3"}) s.candidates.push_back(MakeExample("ad", {ad}));
  return s;
}

uint64_t LogAll(FeedbackLoop& loop, Model& model, int64_t now, Scored& s) {
  auto first = loop.ReserveIds(now, s.impressions.views);
  EXPECT_TRUE(first.ok()) << first.status();
  auto applied = loop.ApplyImpressions(model, now, *first, s.impressions.views);
  EXPECT_TRUE(applied.ok()) << applied.status();
  return *first;
}

// Under the wait policies a joined label is learned exactly as an Update
// of the same context and candidate: the same model bytes.
TEST(FeedbackLoopTest, JoinedLabelLearnsExactlyAsAnUpdate) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  auto looped = NewModel(config), updated = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*looped, &s);
  const uint64_t first = LogAll(loop, *looped, 0, s);
  EXPECT_EQ(looped->SerializeState(), updated->SerializeState());  // nothing learned yet

  const FeedbackItem items[] = {{first + 2, 1.0f, 2.0f, kSecond}, {first, 0.0f, 1.0f, kSecond}};
  const FeedbackApplied applied = loop.ApplyFeedback(*looped, 2 * kSecond, items);
  EXPECT_EQ(applied.outcomes,
            (std::vector<JoinOutcome>{JoinOutcome::kJoined, JoinOutcome::kJoined}));
  EXPECT_EQ(applied.steps, 2u);
  ASSERT_EQ(applied.final_labels.size(), 2u);
  EXPECT_EQ(applied.final_labels[0].margin, static_cast<float>(s.scores[2].margin));
  EXPECT_EQ(applied.delays_seconds, (std::vector<double>{1.0, 1.0}));

  const TrainingExample batch[] = {{&s.context, &s.candidates[2], 1.0f, 2.0f},
                                   {&s.context, &s.candidates[0], 0.0f, 1.0f}};
  LearnBatch(*updated, batch);
  EXPECT_EQ(looped->SerializeState(), updated->SerializeState());
}

TEST(FeedbackLoopTest, EachOutcomeIsToldApartAndChangesNothing) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  auto model = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*model, &s);
  const uint64_t first = LogAll(loop, *model, 0, s);
  const FeedbackItem once[] = {{first, 1.0f, 1.0f, 0}};
  loop.ApplyFeedback(*model, kSecond, once);
  const std::string before = model->SerializeState();
  const uint64_t other = (uint64_t{FeedbackLoop::ModelTag("another")} << 48) | 1;
  ASSERT_NE(FeedbackLoop::ModelTag("another"), FeedbackLoop::ModelTag("loop"));
  const FeedbackItem items[] = {
      {first, 1.0f, 1.0f, 0}, {first + 3, 1.0f, 1.0f, 0}, {other, 1.0f, 1.0f, 0}};
  const FeedbackApplied applied = loop.ApplyFeedback(*model, kSecond, items);
  EXPECT_EQ(applied.outcomes,
            (std::vector<JoinOutcome>{JoinOutcome::kAlreadyLabelled, JoinOutcome::kUnknown,
                                      JoinOutcome::kOtherModel}));
  EXPECT_EQ(applied.steps, 0u);
  EXPECT_EQ(model->SerializeState(), before);
}

TEST(FeedbackLoopTest, WaitNegativeLearnsAnUnlabelledImpressionAsANegativeAtItsTtl) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  auto looped = NewModel(config), updated = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*looped, &s);
  const uint64_t first = LogAll(loop, *looped, 0, s);
  const FeedbackItem click[] = {{first + 1, 1.0f, 1.0f, 0}};
  loop.ApplyFeedback(*looped, kSecond, click);

  // A tick before the TTL expires nothing; at it, the two others.
  EXPECT_EQ(loop.ApplyFeedback(*looped, 10 * kSecond - 1, {}).expired, 0u);
  const FeedbackApplied tick = loop.ApplyFeedback(*looped, 10 * kSecond, {});
  EXPECT_EQ(tick.expired, 2u);
  EXPECT_EQ(tick.steps, 2u);
  ASSERT_EQ(tick.final_labels.size(), 2u);
  EXPECT_EQ(tick.final_labels[0].label, 0.0f);
  // A label after the TTL is late and learns nothing.
  const FeedbackItem late[] = {{first + 2, 1.0f, 1.0f, 0}};
  EXPECT_EQ(loop.ApplyFeedback(*looped, 11 * kSecond, late).outcomes,
            std::vector<JoinOutcome>{JoinOutcome::kExpired});

  const TrainingExample batch[] = {{&s.context, &s.candidates[1], 1.0f, 1.0f},
                                   {&s.context, &s.candidates[0], 0.0f, 1.0f},
                                   {&s.context, &s.candidates[2], 0.0f, 1.0f}};
  LearnBatch(*updated, batch);
  EXPECT_EQ(looped->SerializeState(), updated->SerializeState());
  EXPECT_EQ(loop.buffer().Stats().bytes, 0u);
}

TEST(FeedbackLoopTest, WaitDropLearnsNothingAtTheTtl) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitDrop);
  auto model = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*model, &s);
  LogAll(loop, *model, 0, s);
  const std::string before = model->SerializeState();
  const FeedbackApplied tick = loop.ApplyFeedback(*model, 20 * kSecond, {});
  EXPECT_EQ(tick.expired, 3u);
  EXPECT_EQ(tick.steps, 0u);
  EXPECT_TRUE(tick.final_labels.empty());
  EXPECT_EQ(model->SerializeState(), before);
}

// FNW: every impression is learned at once as a negative with weight
// (1 - p)(1 + p), a click later as a positive with weight (1 + p), p the
// model's probability just before each step.
TEST(FeedbackLoopTest, FakeNegativeWeightedLearnsWithThePapersWeights) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kFakeNegativeWeighted);
  auto looped = NewModel(config), reference = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*looped, &s);
  const uint64_t first = LogAll(loop, *looped, 0, s);
  for (const ImpressionExample& view : s.impressions.views) {
    const double p = Sigmoid(reference->Margin(view.features));
    reference->Learn(view.features, 0.0, FnwNegativeWeight(p));
  }
  EXPECT_EQ(looped->SerializeState(), reference->SerializeState());

  const FeedbackItem click[] = {{first + 1, 1.0f, 3.0f, 0}, {first + 2, 0.0f, 1.0f, 0}};
  const FeedbackApplied applied = loop.ApplyFeedback(*looped, kSecond, click);
  EXPECT_EQ(applied.steps, 1u);  // the non-click was learned already
  const auto& clicked = s.impressions.views[1].features;
  reference->Learn(clicked, 1.0, 3.0 * FnwPositiveWeight(Sigmoid(reference->Margin(clicked))));
  EXPECT_EQ(looped->SerializeState(), reference->SerializeState());
  // At the TTL nothing more is learned; the unlabelled one is a final negative.
  const FeedbackApplied tick = loop.ApplyFeedback(*looped, 20 * kSecond, {});
  EXPECT_EQ(tick.steps, 0u);
  EXPECT_EQ(tick.final_labels.size(), 1u);
  EXPECT_EQ(looped->SerializeState(), reference->SerializeState());
}

TEST(FeedbackLoopTest, UncorrectedFakeNegativesUseWeightOne) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kFakeNegative);
  auto looped = NewModel(config), reference = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*looped, &s);
  const uint64_t first = LogAll(loop, *looped, 0, s);
  const FeedbackItem click[] = {{first, 1.0f, 1.0f, 0}};
  loop.ApplyFeedback(*looped, kSecond, click);
  for (const ImpressionExample& view : s.impressions.views) reference->Learn(view.features, 0, 1);
  reference->Learn(s.impressions.views[0].features, 1, 1);
  EXPECT_EQ(looped->SerializeState(), reference->SerializeState());
}

TEST(FeedbackLoopTest, FullBufferRefusesTheWholeBatchUntilExpiryMakesRoom) {
  ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  Scored s = ThreeAds();
  auto model = NewModel(config);
  Score(*model, &s);
  uint64_t one_batch = 0;
  for (const ImpressionExample& v : s.impressions.views) {
    one_batch += JoinBuffer::ImpressionBytes(v.features.size(), v.dense.size());
  }
  config.feedback.max_buffer_bytes = one_batch + 10;
  FeedbackLoop loop(config);
  LogAll(loop, *model, 0, s);
  auto refused = loop.ReserveIds(kSecond, s.impressions.views);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "feedback.max_buffer_bytes"))
      << refused.status();
  // At the TTL the first batch's room is free again: the reservation counts
  // what expiry at that time will release.
  EXPECT_TRUE(loop.ReserveIds(10 * kSecond, s.impressions.views).ok());
}

TEST(FeedbackLoopTest, ApplyRefusesARecordWhoseIdsDoNotMatch) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  auto model = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*model, &s);
  const uint64_t first = *loop.ReserveIds(0, s.impressions.views);
  auto applied = loop.ApplyImpressions(*model, 0, first + 1, s.impressions.views);
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kDataLoss);
}

// A restored loop (snapshot) continues exactly as the original.
TEST(FeedbackLoopTest, EncodedStateContinuesIdentically) {
  const ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  auto model = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*model, &s);
  const uint64_t first = LogAll(loop, *model, 0, s);
  auto copy = NewModel(config);
  ASSERT_TRUE(copy->ImportState(model->ExportState()).ok());
  FeedbackLoop restored(config);
  ASSERT_TRUE(restored.RestoreState(loop.EncodeState()).ok());
  EXPECT_EQ(restored.EncodeState(), loop.EncodeState());

  const FeedbackItem items[] = {{first + 1, 1.0f, 1.0f, 0}};
  loop.ApplyFeedback(*model, kSecond, items);
  restored.ApplyFeedback(*copy, kSecond, items);
  loop.ApplyFeedback(*model, 30 * kSecond, {});
  restored.ApplyFeedback(*copy, 30 * kSecond, {});
  EXPECT_EQ(model->SerializeState(), copy->SerializeState());
  EXPECT_EQ(restored.EncodeState(), loop.EncodeState());

  std::string damaged = loop.EncodeState();
  damaged[6] ^= 1;
  EXPECT_EQ(restored.RestoreState(damaged).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(restored.EncodeState(), loop.EncodeState());  // unchanged
}

TEST(FeedbackLoopTest, ConfigIsValidatedWithTheFieldNamed) {
  ModelConfig config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  config.feedback.ttl_seconds = -1;
  EXPECT_TRUE(absl::StrContains(ValidateModelConfig(config).message(), "feedback.ttl_seconds"));
  config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  config.feedback.max_buffer_bytes = 10;
  EXPECT_TRUE(
      absl::StrContains(ValidateModelConfig(config).message(), "feedback.max_buffer_bytes"));
  config = LoopConfig(FeedbackConfig::Policy::kWaitNegative);
  config.loss = LossType::kSquared;
  EXPECT_TRUE(absl::StrContains(ValidateModelConfig(config).message(), "loss logistic"));
  FeedbackConfig::Policy policy;
  EXPECT_TRUE(absl::StrContains(ParseFeedbackPolicy("later", &policy).message(), "wait_drop"));
  ASSERT_TRUE(ParseFeedbackPolicy("fake_negative_weighted", &policy).ok());
  EXPECT_EQ(policy, FeedbackConfig::Policy::kFakeNegativeWeighted);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// A record of the replicated log: its ids are the buffer's next ones when
// it is applied, and a buffer that cannot take it refuses it whole, with
// the model and the buffer unchanged.
TEST(FeedbackLoopTest, IdsAssignedAtApplyAreTheNextOnesOrTheRecordIsRefusedWhole) {
  ModelConfig config = LoopConfig(FeedbackConfig::Policy::kFakeNegative);
  config.feedback.max_buffer_bytes = 1024;
  auto model = NewModel(config);
  FeedbackLoop loop(config);
  Scored s = ThreeAds();
  Score(*model, &s);
  const uint64_t next = loop.buffer().Stats().next_id;
  auto applied =
      loop.ApplyImpressions(*model, 1 * kSecond, kIdsAssignedAtApply, s.impressions.views);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->first_id, next);
  EXPECT_EQ(applied->impressions, 3u);
  EXPECT_EQ(loop.buffer().Stats().next_id, next + 3);

  // Repeat until the budget refuses: nothing of the refused record stays.
  absl::StatusOr<FeedbackApplied> more = applied;
  for (int i = 0; i < 100 && more.ok(); ++i) {
    more = loop.ApplyImpressions(*model, 2 * kSecond, kIdsAssignedAtApply, s.impressions.views);
  }
  ASSERT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted) << more.status();
  const std::string buffer = loop.EncodeState();
  const std::string state = model->SerializeState();
  EXPECT_EQ(loop.ApplyImpressions(*model, 3 * kSecond, kIdsAssignedAtApply, s.impressions.views)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(loop.EncodeState() == buffer);
  EXPECT_TRUE(model->SerializeState() == state);
}

}  // namespace
}  // namespace clickd
