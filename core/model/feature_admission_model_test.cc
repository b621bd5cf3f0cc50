// Feature admission inside a model (ModelConfig::admission): a feature not
// admitted takes no part in the step, admission never changes a model that
// admits everything, and the draws are a function of key and round.
#include <random>
#include <vector>

#include "core/model/model.h"
#include "core/model/state_digest.h"
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
  EXPECT_TRUE(ValidateModelConfig(bloom).ok());
  bloom.admission.min_count = 0;
  EXPECT_EQ(ValidateModelConfig(bloom).message(), "admission.min_count is 0; must be in [1, 255]");
  ModelConfig variant;
  variant.variants.push_back({"v"});
  variant.variants[0].admission.policy = AdmissionOptions::Policy::kBloom;
  EXPECT_TRUE(ValidateModelConfig(variant).ok()) << ValidateModelConfig(variant);
  variant.variants[0].admission.counters = 1000;
  const absl::Status s = ValidateModelConfig(variant);
  EXPECT_NE(s.message().find(".admission.counters is 1000; must be a power of 2"),
            std::string::npos)
      << s;
}

ModelConfig Bloom(uint32_t min_count) {
  ModelConfig config;
  config.admission.policy = AdmissionOptions::Policy::kBloom;
  config.admission.min_count = min_count;
  config.admission.counters = 1 << 14;
  // Small, so that the generations roll several times in the stream.
  config.admission.generation_sightings = 3000;
  return config;
}

void LearnRange(Model* model, const std::vector<std::vector<HashedFeature>>& stream, size_t from,
                size_t to) {
  for (size_t i = from; i < to; ++i) model->Learn(stream[i], i % 7 == 0 ? 1 : 0, 1);
}

// The point of keeping the filter in the state: a model restored halfway
// learns the rest exactly as a twin that never restarted, for the model's
// own filter and for a variant's.
TEST(FeatureAdmissionModel, BloomRestoreContinuesLikeATwinThatNeverRestarted) {
  const auto stream = Stream(8000, 5);
  ModelConfig with_variant = Bloom(2);
  with_variant.variants.push_back({"three"});
  with_variant.variants[0].admission = Bloom(3).admission;
  for (const ModelConfig& config : {Bloom(2), Bloom(3), with_variant}) {
    auto twin = *CreateModel(config);
    LearnRange(twin.get(), stream, 0, 4000);
    const Model::State state = twin->ExportState();
    ASSERT_FALSE(state.admission.empty());
    auto restored = *CreateModel(config);
    ASSERT_TRUE(restored->ImportState(state).ok());
    EXPECT_EQ(StateDigest(*restored), StateDigest(*twin));
    LearnRange(twin.get(), stream, 4000, stream.size());
    LearnRange(restored.get(), stream, 4000, stream.size());
    EXPECT_EQ(StateDigest(*restored), StateDigest(*twin));
    EXPECT_EQ(restored->SerializeState(), twin->SerializeState());
    EXPECT_EQ(restored->Stats().admission_admitted, twin->Stats().admission_admitted);

    // Without the filter's counts (a fresh filter over the same
    // coordinates) the continuation differs: the counts matter.
    auto forgetful = *CreateModel(config);
    Model::State no_counts = state;
    no_counts.admission = (*CreateModel(config))->ExportState().admission;
    if (!config.variants.empty()) {
      no_counts.variants[0].admission = (*CreateModel(config))->ExportState().variants[0].admission;
    }
    ASSERT_TRUE(forgetful->ImportState(no_counts).ok());
    LearnRange(forgetful.get(), stream, 4000, stream.size());
    EXPECT_NE(StateDigest(*forgetful), StateDigest(*twin));
  }
}

// The copy-on-write copy carries the filter and the coordinates as of
// BeginStateCopy, however much is learned before Finish. (With admission a
// step looks keys up through the store's admitting upsert, which before
// this test kept no stored state aside for the copy: the copy saw later
// changes, under the probabilistic policy too.)
TEST(FeatureAdmissionModel, StateCopyIsThePointInTime) {
  const auto stream = Stream(6000, 6);
  for (const ModelConfig& config : {Bloom(2), WithProbability(0.3)}) {
    auto model = *CreateModel(config);
    LearnRange(model.get(), stream, 0, 3000);
    const Model::State at = model->ExportState();
    auto copy = model->BeginStateCopy();
    LearnRange(model.get(), stream, 3000, stream.size());
    const Model::State copied = copy->Finish();
    EXPECT_EQ(copied.admission, at.admission);
    EXPECT_TRUE(copied.coordinates == at.coordinates);
    EXPECT_EQ(copied.round.t, 3000u);
  }
  auto model = *CreateModel(Bloom(2));
  LearnRange(model.get(), stream, 0, 3000);
  const std::string at = model->ExportState().admission;
  LearnRange(model.get(), stream, 3000, stream.size());
  EXPECT_NE(model->ExportState().admission, at);
}

TEST(FeatureAdmissionModel, DamagedOrMissingFilterIsDataLossAndChangesNothing) {
  const auto stream = Stream(3000, 7);
  auto source = *CreateModel(Bloom(2));
  LearnRange(source.get(), stream, 0, stream.size());
  Model::State state = source->ExportState();
  auto target = *CreateModel(Bloom(2));
  LearnRange(target.get(), stream, 0, 100);
  const std::string before = target->SerializeState();
  Model::State damaged = state;
  damaged.admission[damaged.admission.size() / 2] ^= 1;
  EXPECT_EQ(target->ImportState(damaged).code(), absl::StatusCode::kDataLoss);
  Model::State missing = state;
  missing.admission.clear();
  EXPECT_EQ(target->ImportState(missing).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(target->SerializeState(), before);
  // Another filter size is not this model's filter either.
  ModelConfig bigger = Bloom(2);
  bigger.admission.counters *= 2;
  EXPECT_EQ((*CreateModel(bigger))->ImportState(state).code(), absl::StatusCode::kDataLoss);
  // And a model without a filter refuses one.
  EXPECT_EQ((*CreateModel(ModelConfig{}))->ImportState(state).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace clickd
