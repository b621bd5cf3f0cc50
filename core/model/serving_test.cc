#include "core/model/serving.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

Example Ex(const std::string& ns, std::vector<std::string> names) {
  Example e;
  Namespace n{ns, {}};
  for (auto& name : names) n.features.push_back(Feature::Named(name));
  e.namespaces.push_back(n);
  return e;
}

Example Concat(const Example& a, const Example& b) {
  Example out = a;
  out.namespaces.insert(out.namespaces.end(), b.namespaces.begin(), b.namespaces.end());
  return out;
}

std::unique_ptr<Model> TrainedModel() {
  ModelConfig config;
  config.hashing.interactions = {{"user", "ad"}};
  auto model = *CreateModel(config);
  const Example ctx = Ex("user", {"u1", "age=30"});
  std::vector<Example> ads = {Ex("ad", {"a1"}), Ex("ad", {"a2", "brand=x"})};
  std::vector<TrainingExample> batch;
  for (int i = 0; i < 50; ++i) {
    batch.push_back({&ctx, &ads[i % 2], i % 2 ? 1.0f : 0.0f, 1.0f});
  }
  LearnBatch(*model, batch);
  return model;
}

TEST(Serving, CandidateScoresEqualWholeExamplePredictions) {
  auto model = TrainedModel();
  const Example ctx = Ex("user", {"u1", "age=30"});
  const std::vector<Example> ads = {Ex("ad", {"a1"}), Ex("ad", {"a2", "brand=x"}),
                                    Ex("ad", {"a3"})};
  const auto scores = ScoreCandidates(*model, ctx, ads);
  ASSERT_EQ(scores.size(), 3u);
  for (size_t i = 0; i < ads.size(); ++i) {
    EXPECT_NEAR(scores[i].prediction, model->Predict(Concat(ctx, ads[i])), 1e-12);
  }
  EXPECT_LT(scores[0].prediction, scores[1].prediction);  // a2 was clicked, a1 not
}

TEST(Serving, ImpressionLearningEqualsFlatLearning) {
  ModelConfig config;
  config.hashing.interactions = {{"user", "ad"}};
  auto split = *CreateModel(config), flat = *CreateModel(config);
  const Example ctx = Ex("user", {"u1", "u2"});
  const Example ad = Ex("ad", {"a1", "u1"});
  const Example whole = Concat(ctx, ad);
  std::vector<TrainingExample> a = {{&ctx, &ad, 1.0f, 2.0f}, {&ctx, &ad, 0.0f, 1.0f}};
  std::vector<TrainingExample> b = {{nullptr, &whole, 1.0f, 2.0f}, {nullptr, &whole, 0.0f, 1.0f}};
  const auto sa = LearnBatch(*split, a);
  const auto sb = LearnBatch(*flat, b);
  EXPECT_EQ(split->SerializeState(), flat->SerializeState());
  EXPECT_EQ(sa[1].margin, sb[1].margin);
  EXPECT_EQ(sa[0].importance, 2.0f);
}

TEST(Serving, ValidationNamesTheEntry) {
  const Example e;
  std::vector<TrainingExample> batch = {{nullptr, &e, 1.0f, 1.0f}, {nullptr, &e, 0.5f, 1.0f}};
  auto field = [](size_t i) { return "examples[" + std::to_string(i) + "]"; };
  absl::Status s = ValidateTrainingBatch(LossType::kLogistic, batch, field);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("examples[1].label is 0.5"), std::string::npos) << s;
  batch[1] = {nullptr, &e, 1.0f, -2.0f};
  s = ValidateTrainingBatch(LossType::kLogistic, batch, field);
  EXPECT_NE(s.message().find("examples[1].importance is -2"), std::string::npos) << s;
}

}  // namespace
}  // namespace clickd
