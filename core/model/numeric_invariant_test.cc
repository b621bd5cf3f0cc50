// The numeric invariant (core/optim/numeric_bounds.h): no accepted input and
// no accepted config makes a weight, an accumulator or a margin non-finite,
// for every per-coordinate optimizer and loss.
#include <cmath>
#include <string>
#include <vector>

#include "core/model/serving.h"
#include "core/optim/numeric_bounds.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

Example Ex(const std::string& ns, std::vector<Feature> features) {
  Example e;
  e.namespaces.push_back({ns, std::move(features)});
  return e;
}

std::string Field(size_t i) { return "examples[" + std::to_string(i) + "]"; }

TEST(NumericInvariant, HugeImportanceAndSquaredLabelAreRefusedBeforeLearning) {
  ModelConfig config;
  config.loss = LossType::kSquared;
  auto model = *CreateModel(config);
  const Example e = Ex("f", {Feature::Named("a")});
  std::vector<TrainingExample> batch = {{nullptr, &e, 1.0f, 1.0f}, {nullptr, &e, 1.0f, 1e20f}};
  absl::Status s = ValidateTrainingBatch(config.loss, batch, Field);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].importance is 1e+20; the limit is 10000");
  batch = {{nullptr, &e, 1e20f, 1.0f}};
  s = ValidateTrainingBatch(config.loss, batch, Field);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "examples[0].label is 1e+20; the limit under squared loss is 1e+06 in absolute value");
  // At the limits the batch is accepted.
  batch = {
      {nullptr, &e, static_cast<float>(-kMaxSquaredLabel), static_cast<float>(kMaxImportance)}};
  EXPECT_TRUE(ValidateTrainingBatch(config.loss, batch, Field).ok());
}

// Every per-coordinate optimizer with every loss it takes.
std::vector<ModelConfig> AllConfigs() {
  std::vector<ModelConfig> configs;
  for (OptimizerType type :
       {OptimizerType::kFtrl, OptimizerType::kAdagrad, OptimizerType::kAdagradDa,
        OptimizerType::kPcOgd, OptimizerType::kGlobalOgd, OptimizerType::kSgd, OptimizerType::kPa,
        OptimizerType::kCw, OptimizerType::kMetaGradDiag}) {
    for (LossType loss : {LossType::kLogistic, LossType::kSquared, LossType::kHinge}) {
      if (IsBinaryClassifier(type) && loss != LossType::kHinge) continue;
      ModelConfig c;
      c.optimizer.type = type;
      c.loss = loss;
      c.hashing.interactions = {{"u", "a", "a"}};  // values multiply to 1e18
      configs.push_back(c);
    }
  }
  return configs;
}

std::string Name(const ModelConfig& c) {
  return OptimizerName(c) + "/" + std::string(LossTypeName(c.loss));
}

void ExpectFinite(const Model& model, const std::string& what) {
  EXPECT_TRUE(StateIsFinite(model.ExportState())) << what;
  const Example unseen = Ex("z", {Feature::Named("never seen")});
  EXPECT_TRUE(std::isfinite(model.Predict(unseen))) << what;
}

// Inputs at their limits, repeated, with the rates at theirs: every
// prediction stays finite (the clamps of the learning step hold).
TEST(NumericInvariant, ExtremeAcceptedInputsRepeatedKeepEveryPredictionFinite) {
  const float v = static_cast<float>(kMaxFeatureValue);
  const Example user = Ex("u", {Feature::Named("u1", v), Feature::Named("u2", -v)});
  const Example ad = Ex("a", {Feature::Named("a1", v), Feature::Named("a2", v)});
  const float w = static_cast<float>(kMaxImportance);
  for (ModelConfig config : AllConfigs()) {
    OptimizerConfig& o = config.optimizer;
    o.ftrl.alpha = o.adagrad.eta = o.sgd.eta = kMaxRate;
    o.ftrl.beta = o.adagrad.delta = kMinScale;
    o.pa.c = kMaxScale;
    o.cw.a = kMaxScale;
    o.metagrad_diag.diameter = o.metagrad_diag.gradient_bound = kMinScale;
    ASSERT_TRUE(ValidateModelConfig(config).ok()) << Name(config);
    auto model = *CreateModel(config);
    const float hi = config.loss == LossType::kSquared ? kMaxSquaredLabel : 1.0f;
    const float lo = config.loss == LossType::kSquared ? -kMaxSquaredLabel : 0.0f;
    std::vector<TrainingExample> batch;
    for (int i = 0; i < 1000; ++i) batch.push_back({&user, &ad, i % 3 ? hi : lo, w});
    ASSERT_TRUE(ValidateTrainingBatch(config.loss, batch, Field).ok());
    for (int round = 0; round < 100; ++round) {
      for (const ScoredExample& s : LearnBatch(*model, batch)) {
        ASSERT_TRUE(std::isfinite(s.margin)) << Name(config) << " round " << round;
      }
    }
    ExpectFinite(*model, Name(config));
    EXPECT_TRUE(std::isfinite(ScoreCandidates(*model, user, {&ad, 1})[0].margin)) << Name(config);
  }
}

// A dense block under each learner, squared loss, values and labels at their
// limits: the dense margin stays finite (dense metagrad's covariance update
// once turned NaN here).
TEST(NumericInvariant, DenseLearnersStayFiniteAtTheLimits) {
  const float v = static_cast<float>(kMaxDenseValue);
  Example e = Ex("u", {Feature::Named("u1", static_cast<float>(kMaxFeatureValue))});
  for (DenseOptimizerType type :
       {DenseOptimizerType::kAdaDiag, DenseOptimizerType::kAdaDiagDa, DenseOptimizerType::kAdaFull,
        DenseOptimizerType::kAdaFullDa, DenseOptimizerType::kAdaFd, DenseOptimizerType::kAdaFdDa,
        DenseOptimizerType::kOns, DenseOptimizerType::kFdSon, DenseOptimizerType::kMetaGrad}) {
    ModelConfig config;
    config.optimizer.type = OptimizerType::kSgd;
    config.optimizer.sgd.eta = kMaxRate;
    config.loss = LossType::kSquared;
    config.dense_namespaces = {{"d", 3}};
    config.dense_optimizer.type = type;
    config.dense_optimizer.tau = 2;
    const std::string name(DenseOptimizerTypeName(type));
    ASSERT_TRUE(ValidateModelConfig(config).ok()) << name;
    auto model = *CreateModel(config);
    e.dense = {{"d", {v, -v, v}}};
    std::vector<TrainingExample> batch;
    for (int i = 0; i < 4; ++i) {
      batch.push_back({nullptr, &e, i % 2 ? 1e6f : -1e6f, static_cast<float>(kMaxImportance)});
    }
    ASSERT_TRUE(CheckDenseValues(*model, nullptr, "", e, "example").ok());
    for (int round = 0; round < 50; ++round) {
      for (const ScoredExample& s : LearnBatch(*model, batch)) {
        ASSERT_TRUE(std::isfinite(s.margin)) << name << " round " << round;
      }
    }
    EXPECT_TRUE(std::isfinite(ScoreCandidates(*model, Example{}, {&e, 1})[0].margin)) << name;
  }
}

// The fuzzer's first finding (corpus file dense_metagrad_squared): sgd
// diverging under squared loss drives the loss gradient to its clamp, and
// dense metagrad's covariance update lost positive definiteness to rounding
// and turned the margin NaN on the second pass.
TEST(NumericInvariant, DenseMetaGradAfterClampedGradientsStaysFinite) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kSgd;
  config.loss = LossType::kSquared;
  config.hashing.bits = 1;
  config.hashing.interactions = {{"a", "b"}};
  config.dense_namespaces = {{"d", 1}};
  config.dense_optimizer.type = DenseOptimizerType::kMetaGrad;
  config.dense_optimizer.tau = 3;
  auto model = *CreateModel(config);
  auto with_dense = [](Example e, float d) {
    e.dense = {{"d", {d}}};
    return e;
  };
  Example ab;
  ab.namespaces = {{"a", {Feature::WithId(5)}}, {"b", {Feature::WithId(5)}}};
  const Example a3 =
      Ex("a", {Feature::WithId(5), Feature::WithId(3), Feature::WithId(3), Feature::WithId(3)});
  const std::vector<Example> examples = {with_dense(Example{}, 7.64704f), with_dense(ab, -1e6f),
                                         with_dense(a3, 10), with_dense(Example{}, 10)};
  const std::vector<TrainingExample> batch = {{nullptr, &examples[0], 1, 1},
                                              {nullptr, &examples[1], 0, 1},
                                              {nullptr, &examples[2], -1, 1},
                                              {nullptr, &examples[3], -1, 1}};
  ASSERT_TRUE(ValidateTrainingBatch(config.loss, batch, Field).ok());
  for (int round = 0; round < 50; ++round) {
    for (const ScoredExample& s : LearnBatch(*model, batch)) {
      ASSERT_TRUE(std::isfinite(s.margin)) << "round " << round;
    }
  }
}

// Past the server's checks (an offline file, a direct caller): the learning
// step's clamps keep even unvalidated magnitudes finite.
TEST(NumericInvariant, LearningStepClampsUnvalidatedMagnitudes) {
  const float big = 3e38f;  // finite; its crosses overflow a float
  const Example user = Ex("u", {Feature::Named("u1", big)});
  const Example ad = Ex("a", {Feature::Named("a1", -big), Feature::Named("a2", big)});
  for (const ModelConfig& config : AllConfigs()) {
    auto model = *CreateModel(config);
    for (int i = 0; i < 200; ++i) {
      const float label = config.loss == LossType::kSquared ? (i % 2 ? 1e20f : -1e20f) : i % 2;
      std::vector<TrainingExample> batch = {{&user, &ad, label, 1e20f}};
      for (const ScoredExample& s : LearnBatch(*model, batch)) {
        ASSERT_TRUE(std::isfinite(s.margin)) << Name(config) << " step " << i;
      }
    }
    ExpectFinite(*model, Name(config));
  }
}

}  // namespace
}  // namespace clickd
