// Feature admission inside a model (ModelConfig::admission): a feature not
// admitted takes no part in the step, admission never changes a model that
// admits everything, and the draws are a function of key and round.
#include <random>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::vector<std::vector<HashedFeature>> Stream(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<HashedFeature>> out(n);
  for (auto& example : out) {
    for (int i = 0; i < 12; ++i) {
      // A few frequent keys and a long tail of rare ones.
      const uint64_t key = i < 4 ? rng() % 20 : 1000 + rng() % 100000;
      example.push_back({key, 1.0f});
    }
    std::sort(example.begin(), example.end(),
              [](const HashedFeature& a, const HashedFeature& b) { return a.key < b.key; });
    example.erase(
        std::unique(example.begin(), example.end(),
                    [](const HashedFeature& a, const HashedFeature& b) { return a.key == b.key; }),
        example.end());
  }
  return out;
}

std::unique_ptr<Model> Learned(const ModelConfig& config,
                               const std::vector<std::vector<HashedFeature>>& stream) {
  auto model = *CreateModel(config);
  for (size_t i = 0; i < stream.size(); ++i) model->Learn(stream[i], i % 7 == 0 ? 1 : 0, 1);
  return model;
}

ModelConfig WithProbability(double p, const std::string& optimizer = "ftrl") {
  ModelConfig config;
  EXPECT_TRUE(SetOptimizerName(optimizer, &config).ok());
  if (optimizer == "pa" || optimizer == "cw") config.loss = LossType::kHinge;
  config.admission.policy = AdmissionOptions::Policy::kPoisson;
  config.admission.probability = p;
  return config;
}

TEST(FeatureAdmissionModel, ProbabilityOneIsTheModelWithoutAdmission) {
  const auto stream = Stream(2000, 1);
  for (const char* optimizer : {"ftrl", "adagrad", "global_ogd", "metagrad_diag", "pa"}) {
    ModelConfig plain;
    ASSERT_TRUE(SetOptimizerName(optimizer, &plain).ok());
    if (std::string(optimizer) == "pa") plain.loss = LossType::kHinge;
    EXPECT_EQ(Learned(WithProbability(1.0, optimizer), stream)->SerializeState(),
              Learned(plain, stream)->SerializeState())
        << optimizer;
  }
}

TEST(FeatureAdmissionModel, RareFeaturesStayOutAndTheDrawsRepeat) {
  const auto stream = Stream(5000, 2);
  ModelConfig plain;
  const auto all = Learned(plain, stream);
  for (const char* optimizer : {"ftrl", "global_ogd", "metagrad_diag"}) {
    const auto some = Learned(WithProbability(0.1, optimizer), stream);
    const auto again = Learned(WithProbability(0.1, optimizer), stream);
    EXPECT_EQ(some->SerializeState(), again->SerializeState()) << optimizer;
    // Frequent keys (seen ~hundreds of times) get in; most of the tail,
    // seen about once each, does not.
    EXPECT_LT(some->Stats().coordinates, all->Stats().coordinates / 4) << optimizer;
    EXPECT_GE(some->Stats().coordinates, 20u) << optimizer;
    // Every admission made one coordinate; most sightings of new features
    // were turned away.
    EXPECT_EQ(some->Stats().admission_admitted, some->Stats().coordinates) << optimizer;
    EXPECT_GT(some->Stats().admission_sightings, 5 * some->Stats().admission_admitted);
  }
}

TEST(FeatureAdmissionModel, AFeatureNotAdmittedIsAbsentFromTheStep) {
  // p tiny: a new key is essentially never admitted, so learning an example
  // of one new key changes nothing but the round.
  ModelConfig config = WithProbability(1e-12);
  auto model = *CreateModel(config);
  const std::vector<HashedFeature> example = {{123456789, 1.0f}};
  EXPECT_EQ(model->Learn(example, 1, 1), 0.0);
  EXPECT_EQ(model->Margin(example), 0.0);
  EXPECT_EQ(model->Stats().coordinates, 0u);
  EXPECT_EQ(model->Updates(), 1u);
}

TEST(FeatureAdmissionModel, ValidationNamesTheField) {
  for (double p : {0.0, -0.5, 1.5}) {
    const absl::Status s = ValidateModelConfig(WithProbability(p));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << p;
    EXPECT_NE(s.message().find("admission.probability"), std::string::npos) << s;
  }
  ModelConfig bloom;
  bloom.admission.policy = AdmissionOptions::Policy::kBloom;
  EXPECT_EQ(ValidateModelConfig(bloom).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace clickd
