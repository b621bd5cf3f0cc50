#include "core/model/variant_model.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Labeled {
  std::vector<HashedFeature> features;
  double label;
};

// A click stream from a hidden logistic model over 2,000 coordinates.
std::vector<Labeled> Stream(const FeatureHasher& hasher, int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> truth(2000);
  for (double& w : truth) w = 2 * unit(rng) - 1;
  std::vector<Labeled> out;
  for (int i = 0; i < n; ++i) {
    Example e;
    e.namespaces.push_back({"u", {}});
    double margin = -1.5;
    for (int j = 0; j < 6; ++j) {
      const uint64_t id = static_cast<uint64_t>(std::pow(2000.0, unit(rng))) % 2000;
      e.namespaces[0].features.push_back(Feature::WithId(id));
      margin += truth[id];
    }
    Labeled l;
    hasher.Hash(e, &l.features);
    l.label = unit(rng) < Sigmoid(margin) ? 1 : 0;
    out.push_back(std::move(l));
  }
  return out;
}

ModelConfig ThreeVariants() {
  ModelConfig config;
  config.optimizer.ftrl.alpha = 0.0005;  // the primary learns far too slowly
  config.variants.push_back({"good", {}});
  config.variants.back().optimizer.ftrl.alpha = 0.1;
  config.variants.push_back({"ada", {}});
  config.variants.back().optimizer.type = OptimizerType::kAdagrad;
  return config;
}

TEST(VariantModel, EachVariantLearnsExactlyAsAModelOfItsOwn) {
  const ModelConfig config = ThreeVariants();
  auto model = *CreateModel(config);
  ModelConfig primary_config = config;
  primary_config.variants.clear();
  auto primary = *CreateModel(primary_config);
  auto good = *CreateModel(VariantModelConfig(config, config.variants[0]));
  auto ada = *CreateModel(VariantModelConfig(config, config.variants[1]));
  for (const Labeled& l : Stream(model->hasher(), 3000, 1)) {
    model->Learn(l.features, l.label, 1.0);
    primary->Learn(l.features, l.label, 1.0);
    good->Learn(l.features, l.label, 1.0);
    ada->Learn(l.features, l.label, 1.0);
  }
  auto* variants = dynamic_cast<VariantModel*>(model.get());
  ASSERT_NE(variants, nullptr);
  EXPECT_EQ(variants->Variant("primary")->SerializeState(), primary->SerializeState());
  EXPECT_EQ(variants->Variant("good")->SerializeState(), good->SerializeState());
  EXPECT_EQ(variants->Variant("ada")->SerializeState(), ada->SerializeState());
  EXPECT_EQ(variants->Variant("nope"), nullptr);
  EXPECT_EQ(model->Updates(), 3000u);
  EXPECT_EQ(model->Stats().coordinates,
            primary->Stats().coordinates + good->Stats().coordinates + ada->Stats().coordinates);
}

TEST(VariantModel, TheBetterVariantBecomesChampionOnceAndServes) {
  auto model = *CreateModel(ThreeVariants());
  auto* variants = dynamic_cast<VariantModel*>(model.get());
  const auto stream = Stream(model->hasher(), 60000, 2);
  std::vector<std::string> champions;
  for (size_t i = 0; i < stream.size(); ++i) {
    const double served = model->Learn(stream[i].features, stream[i].label, 1.0);
    const std::string champion(variants->Champion());
    if (champions.empty() || champions.back() != champion) champions.push_back(champion);
    // No change before a half-life of examples.
    if (i + 1 < kSelectionHalfLife) ASSERT_EQ(champion, "primary") << i;
    (void)served;
  }
  // One change, from the slow primary to a variant that learns; no flapping.
  ASSERT_GE(champions.size(), 2u);
  EXPECT_LE(champions.size(), 3u);
  EXPECT_NE(champions.back(), "primary");
  // Predict scores with the champion.
  const Model* champion = variants->Variant(variants->Champion());
  EXPECT_EQ(model->Margin(stream[5].features), champion->Margin(stream[5].features));
  const auto reports = variants->Reports();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].name, "primary");
  EXPECT_EQ(reports[0].examples, 60000u);
  for (const VariantReport& r : reports) {
    EXPECT_EQ(r.champion, r.name == variants->Champion());
    EXPECT_TRUE(std::isfinite(r.loss) && std::isfinite(r.recent_loss)) << r.name;
    EXPECT_GT(r.coordinates, 0u);
  }
  // The champion's recent loss is the lowest by the margin the rule needs.
  const VariantReport& best = reports[1].champion ? reports[1] : reports[2];
  EXPECT_LT(best.recent_loss, reports[0].recent_loss * (1 - kSelectionMinGain));
}

TEST(VariantModel, LearnReturnsTheMarginOfTheChampionBeforeTheStep) {
  auto model = *CreateModel(ThreeVariants());
  auto primary_config = ThreeVariants();
  primary_config.variants.clear();
  auto primary = *CreateModel(primary_config);
  for (const Labeled& l : Stream(model->hasher(), 500, 3)) {
    EXPECT_EQ(model->Learn(l.features, l.label, 1.0), primary->Learn(l.features, l.label, 1.0));
  }
}

TEST(VariantModel, SameStreamSameStateAndChampion) {
  auto a = *CreateModel(ThreeVariants());
  auto b = *CreateModel(ThreeVariants());
  for (const Labeled& l : Stream(a->hasher(), 25000, 4)) {
    a->Learn(l.features, l.label, 1.0);
    b->Learn(l.features, l.label, 1.0);
  }
  EXPECT_EQ(a->SerializeState(), b->SerializeState());
  EXPECT_EQ(dynamic_cast<VariantModel&>(*a).Champion(), dynamic_cast<VariantModel&>(*b).Champion());
}

TEST(VariantModel, StateRoundTripsAndACopyIsPointInTime) {
  auto model = *CreateModel(ThreeVariants());
  const auto stream = Stream(model->hasher(), 30000, 5);
  for (size_t i = 0; i < 20000; ++i) model->Learn(stream[i].features, stream[i].label, 1.0);
  const Model::State at = model->ExportState();
  auto copy = model->BeginStateCopy();
  for (size_t i = 20000; i < stream.size(); ++i) {
    model->Learn(stream[i].features, stream[i].label, 1.0);
  }
  const Model::State copied = copy->Finish();
  auto restored = *CreateModel(ThreeVariants());
  ASSERT_TRUE(restored->ImportState(copied).ok()) << restored->ImportState(copied);
  auto from_export = *CreateModel(ThreeVariants());
  ASSERT_TRUE(from_export->ImportState(at).ok());
  EXPECT_EQ(restored->SerializeState(), from_export->SerializeState());
  EXPECT_EQ(dynamic_cast<VariantModel&>(*restored).Champion(),
            dynamic_cast<VariantModel&>(*from_export).Champion());
  // Continuing from the restored state is continuing the original.
  auto replayed = *CreateModel(ThreeVariants());
  for (size_t i = 0; i < stream.size(); ++i) {
    replayed->Learn(stream[i].features, stream[i].label, 1.0);
    if (i >= 20000) restored->Learn(stream[i].features, stream[i].label, 1.0);
  }
  EXPECT_EQ(restored->SerializeState(), replayed->SerializeState());
}

TEST(VariantModel, ADamagedSelectionIsRefusedAndChangesNothing) {
  auto model = *CreateModel(ThreeVariants());
  for (const Labeled& l : Stream(model->hasher(), 200, 6)) model->Learn(l.features, l.label, 1.0);
  const std::string before = model->SerializeState();
  Model::State state = model->ExportState();
  auto target = *CreateModel(ThreeVariants());
  const std::string empty = target->SerializeState();
  for (size_t cut : {size_t{0}, size_t{3}, state.selection.size() - 1}) {
    Model::State bad = state;
    bad.selection.resize(cut);
    EXPECT_EQ(target->ImportState(bad).code(), absl::StatusCode::kDataLoss) << cut;
  }
  Model::State champion_out_of_range = state;
  champion_out_of_range.selection[8] = 9;  // after version and count
  EXPECT_EQ(target->ImportState(champion_out_of_range).code(), absl::StatusCode::kDataLoss);
  Model::State wrong_kind = state;
  wrong_kind.variants[1].state_size = 4;
  EXPECT_EQ(target->ImportState(wrong_kind).code(), absl::StatusCode::kDataLoss);
  Model::State missing = state;
  missing.variants.pop_back();
  EXPECT_EQ(target->ImportState(missing).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(target->SerializeState(), empty);
  ASSERT_TRUE(target->ImportState(state).ok());
  EXPECT_EQ(target->SerializeState(), before);
}

TEST(VariantModel, AVariantMayAdmitFeaturesOfItsOwn) {
  ModelConfig config = ThreeVariants();
  config.variants[0].admission = {.policy = AdmissionOptions::Policy::kPoisson, .probability = 0.2};
  auto model = *CreateModel(config);
  auto alone = *CreateModel(VariantModelConfig(config, config.variants[0]));
  for (const Labeled& l : Stream(model->hasher(), 3000, 8)) {
    model->Learn(l.features, l.label, 1.0);
    alone->Learn(l.features, l.label, 1.0);
  }
  const auto reports = dynamic_cast<VariantModel&>(*model).Reports();
  EXPECT_LT(reports[1].coordinates, reports[0].coordinates);
  EXPECT_EQ(dynamic_cast<VariantModel&>(*model).Variant("good")->SerializeState(),
            alone->SerializeState());
}

TEST(VariantModel, ValidationNamesTheField) {
  auto error = [](ModelConfig c) { return std::string(ValidateModelConfig(c).message()); };
  ModelConfig c = ThreeVariants();
  EXPECT_TRUE(ValidateModelConfig(c).ok());
  c.variants[1].name = "good";
  EXPECT_EQ(error(c), "variants[1].name \"good\" repeats variants[0]");
  c = ThreeVariants();
  c.variants[0].name = "primary";
  EXPECT_EQ(error(c), "variants[0].name \"primary\" is the model's own optimizer; pick another");
  c.variants[0].name = "a b";
  EXPECT_EQ(error(c), "variants[0].name \"a b\" must be 1..64 characters of [A-Za-z0-9_.-]");
  c = ThreeVariants();
  c.variants[1].optimizer.adagrad.eta = -1;
  EXPECT_EQ(error(c).rfind("variants[1].adagrad.eta is -1", 0), 0u) << error(c);
  c = ThreeVariants();
  c.variants[0].optimizer.type = OptimizerType::kPa;
  EXPECT_EQ(error(c),
            "variants[0].optimizer pa is a binary classifier and takes loss hinge; the model's "
            "loss is logistic");
  c = ThreeVariants();
  c.variants[0].optimizer.type = OptimizerType::kDense;
  EXPECT_EQ(error(c), "variants[0].optimizer: a variant takes a per-coordinate optimizer");
  c = ThreeVariants();
  c.dense_namespaces.push_back({"emb", 16});
  EXPECT_EQ(error(c), "variants: a model with a dense learner or a dense block takes no variants");
  c = ThreeVariants();
  c.variants[1].admission = {.policy = AdmissionOptions::Policy::kPoisson, .probability = 1.5};
  EXPECT_EQ(error(c).rfind("variants[1].admission", 0), 0u) << error(c);
  // A variant may keep a Bloom filter of its own; its ranges are checked.
  c.variants[1].admission = {.policy = AdmissionOptions::Policy::kBloom};
  EXPECT_EQ(error(c), "");
  c.variants[1].admission.generation_sightings = 0;
  EXPECT_EQ(error(c), "variants[1].admission.generation_sightings is 0; must be >= 1");
  c = ThreeVariants();
  c.variants.resize(kMaxVariants + 1, c.variants[0]);
  EXPECT_EQ(error(c), "variants: 9 variants; at most 8");
}

}  // namespace
}  // namespace clickd
