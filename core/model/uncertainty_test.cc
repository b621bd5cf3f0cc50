// Model::Uncertainty against McMahan et al. 2013's section 5 formula,
// computed here from the exported coordinates, and Model::Weights against
// Margin, bit for bit, for every optimizer.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/model/model.h"
#include "core/model/variant_model.h"
#include "core/optim/loss.h"
#include "core/optim/metagrad_grid.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Labeled {
  std::vector<HashedFeature> features;
  double label;
};

// Examples over 30 keys (1..30) with values of both signs, keys unique,
// labelled by a hidden logistic model (weight +1 for odd keys, -1 for even).
std::vector<Labeled> Stream(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Labeled> out;
  for (int i = 0; i < n; ++i) {
    Labeled l;
    double margin = 0;
    for (uint64_t key = 1 + rng() % 3; key <= 30; key += 1 + rng() % 5) {
      l.features.push_back({key, value(rng)});
      margin += (key % 2 == 1 ? 1.0 : -1.0) * l.features.back().value;
    }
    l.label = unit(rng) < Sigmoid(margin) ? 1.0 : 0.0;
    out.push_back(std::move(l));
  }
  return out;
}

void LearnAll(Model& model, const std::vector<Labeled>& data) {
  for (const Labeled& l : data) model.Learn(l.features, l.label, 1.0);
}

// The exported coordinates as key -> State of optimizer O.
template <typename O>
absl::flat_hash_map<uint64_t, typename O::State> Coordinates(const Model& model) {
  const Model::State state = model.ExportState();
  EXPECT_EQ(state.state_size, sizeof(typename O::State));
  absl::flat_hash_map<uint64_t, typename O::State> out;
  const size_t record = sizeof(uint64_t) + sizeof(typename O::State);
  for (size_t at = 0; at + record <= state.coordinates.size(); at += record) {
    uint64_t key;
    typename O::State s;
    std::memcpy(&key, state.coordinates.data() + at, sizeof(key));
    std::memcpy(&s, state.coordinates.data() + at + sizeof(key), sizeof(s));
    out[key] = s;
  }
  return out;
}

// Features the stream taught (keys 1..30) and two it never saw (900, 901),
// one of them with a zero value.
std::vector<HashedFeature> Probe() {
  std::vector<HashedFeature> out;
  for (uint64_t key = 1; key <= 30; key += 2) out.push_back({key, 0.25f * (key % 7) - 0.5f});
  out.push_back({900, 1.5f});
  out.push_back({901, 0.0f});
  return out;
}

// sum_i |x_i| rate(state_i) over the probe, a fresh State for a key not held.
template <typename O, typename Rate>
double Formula(const Model& model, Rate rate) {
  const auto coordinates = Coordinates<O>(model);
  double u = 0;
  for (const HashedFeature& f : Probe()) {
    auto it = coordinates.find(f.key);
    u += std::abs(static_cast<double>(f.value)) *
         rate(it == coordinates.end() ? typename O::State{} : it->second);
  }
  return u;
}

TEST(Uncertainty, FtrlIsThePapersFormula) {
  ModelConfig config;
  config.optimizer.ftrl.alpha = 0.07;
  config.optimizer.ftrl.beta = 0.5;
  config.optimizer.ftrl.lambda1 = 0.3;
  auto model = *CreateModel(config);
  LearnAll(*model, Stream(200, 1));
  const double u = Formula<FtrlProximal>(*model, [](const FtrlProximal::State& s) {
    return 0.07 / (0.5 + std::sqrt(static_cast<double>(s.n)));
  });
  EXPECT_GT(u, 0);
  EXPECT_DOUBLE_EQ(model->Uncertainty(Probe()), u);
  // Learning shrinks the rates of the coordinates it touches.
  const double before = model->Uncertainty(Probe());
  LearnAll(*model, Stream(200, 2));
  EXPECT_LT(model->Uncertainty(Probe()), before);
}

TEST(Uncertainty, AdagradIsEtaOverH) {
  for (OptimizerType type : {OptimizerType::kAdagrad, OptimizerType::kAdagradDa}) {
    ModelConfig config;
    config.optimizer.type = type;
    config.optimizer.adagrad.eta = 0.2;
    config.optimizer.adagrad.delta = 0.3;
    auto model = *CreateModel(config);
    LearnAll(*model, Stream(200, 3));
    // AdagradCmd and AdagradDa states both end in sum_g2.
    const double u = Formula<AdagradCmd>(*model, [](const AdagradCmd::State& s) {
      return 0.2 / (0.3 + std::sqrt(static_cast<double>(s.sum_g2)));
    });
    EXPECT_DOUBLE_EQ(model->Uncertainty(Probe()), u) << OptimizerTypeName(type);
  }
}

TEST(Uncertainty, PcOgdIsItsNextRateForAUnitGradient) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kPcOgd;
  config.optimizer.pc_ogd.radius = 2.0;
  config.optimizer.pc_ogd.scale = 0.05;
  auto model = *CreateModel(config);
  LearnAll(*model, Stream(200, 4));
  const double u = Formula<PcOgd>(*model, [](const PcOgd::State& s) {
    return 0.05 * 2.0 * 2.0 / std::sqrt(static_cast<double>(s.sum_g2) + 1.0);
  });
  EXPECT_DOUBLE_EQ(model->Uncertainty(Probe()), u);
}

TEST(Uncertainty, UnseenFeaturesHaveTheInitialRate) {
  const std::vector<HashedFeature> x = {{5, 2.0f}, {6, -0.5f}};  // sum |x_i| = 2.5
  ModelConfig ftrl;
  ftrl.optimizer.ftrl.alpha = 0.1;
  ftrl.optimizer.ftrl.beta = 1.0;
  EXPECT_DOUBLE_EQ((*CreateModel(ftrl))->Uncertainty(x), 2.5 * 0.1 / 1.0);
  ModelConfig adagrad;
  adagrad.optimizer.type = OptimizerType::kAdagrad;
  adagrad.optimizer.adagrad.eta = 0.2;
  adagrad.optimizer.adagrad.delta = 0.5;
  EXPECT_DOUBLE_EQ((*CreateModel(adagrad))->Uncertainty(x), 2.5 * 0.2 / 0.5);
  ModelConfig pc_ogd;
  pc_ogd.optimizer.type = OptimizerType::kPcOgd;
  EXPECT_DOUBLE_EQ((*CreateModel(pc_ogd))->Uncertainty(x), 2.5 * 2.0 / 80.0);  // scale 2R
  ModelConfig sgd;
  sgd.optimizer.type = OptimizerType::kSgd;
  EXPECT_DOUBLE_EQ((*CreateModel(sgd))->Uncertainty(x), 2.5 * 0.3);
  // Unseen in a model that has learned other keys: still the initial rate.
  auto trained = *CreateModel(ftrl);
  LearnAll(*trained, Stream(100, 5));
  EXPECT_DOUBLE_EQ(trained->Uncertainty({{777, 2.0f}, {778, -0.5f}}), 2.5 * 0.1);
  EXPECT_EQ(trained->Uncertainty({}), 0.0);
}

TEST(Uncertainty, MetaGradDiagIsTheTiltedAverageOfItsSlavesRates) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kMetaGradDiag;
  auto model = *CreateModel(config);
  // A fresh coordinate: the prior's average (weights pi eta) of eta D^2.
  const double d = config.optimizer.metagrad_diag.diameter;
  double num = 0, den = 0;
  for (int i = 0; i < MetaGradDiag::kSlaves; ++i) {
    const double eta = MetaGradEta(i, d, config.optimizer.metagrad_diag.gradient_bound);
    const double tilted = std::exp(MetaGradLogPrior(i, MetaGradDiag::kSlaves)) * eta;
    num += tilted * eta * d * d;
    den += tilted;
  }
  EXPECT_NEAR(model->Uncertainty({{1, 1.0f}}), num / den, 1e-12 * num / den);
  LearnAll(*model, Stream(300, 6));
  const double learned = model->Uncertainty({{1, 1.0f}});
  EXPECT_TRUE(std::isfinite(learned));
  EXPECT_LT(learned, num / den);
}

TEST(Uncertainty, GlobalRatesAreTheSameForEveryCoordinate) {
  ModelConfig sgd;
  sgd.optimizer.type = OptimizerType::kSgd;
  auto model = *CreateModel(sgd);
  LearnAll(*model, Stream(16, 7));
  EXPECT_DOUBLE_EQ(model->Uncertainty({{1, 1.0f}, {999, -3.0f}}), 4.0 * 0.3 / 4.0);  // t = 16

  ModelConfig global;
  global.optimizer.type = OptimizerType::kGlobalOgd;
  auto ogd = *CreateModel(global);
  // No gradient yet: the rate divides by zero.
  EXPECT_TRUE(std::isnan(ogd->Uncertainty({{1, 1.0f}})));
  LearnAll(*ogd, Stream(50, 8));
  const RoundContext round = ogd->ExportState().round;
  const double eta = (1.0 / 80.0) * 2.0 * std::sqrt(static_cast<double>(round.coordinates)) /
                     std::sqrt(2.0 * round.sum_grad_norm_sq);
  EXPECT_DOUBLE_EQ(ogd->Uncertainty({{1, 1.0f}, {999, -3.0f}}), 4.0 * eta);
}

TEST(Uncertainty, NotAvailableIsNaN) {
  for (OptimizerType type : {OptimizerType::kPa, OptimizerType::kCw}) {
    ModelConfig config;
    config.optimizer.type = type;
    config.loss = LossType::kHinge;
    auto model = *CreateModel(config);
    LearnAll(*model, Stream(50, 9));
    EXPECT_TRUE(std::isnan(model->Uncertainty({{1, 1.0f}}))) << OptimizerTypeName(type);
    // Zero values add nothing, whatever the rate.
    EXPECT_EQ(model->Uncertainty({{1, 0.0f}}), 0.0) << OptimizerTypeName(type);
  }
  ModelConfig dense;
  ASSERT_TRUE(SetOptimizerName("ada_full", &dense).ok());
  dense.hashing.bits = 4;
  EXPECT_TRUE(std::isnan((*CreateModel(dense))->Uncertainty({{1, 1.0f}})));
}

ModelVariant AdagradVariant() {
  ModelVariant v;
  v.name = "ada";
  v.optimizer.type = OptimizerType::kAdagrad;
  return v;
}

// Every model kind: the per-coordinate optimizers, a dense learner, and
// variants.
std::vector<ModelConfig> EveryKind() {
  std::vector<ModelConfig> out;
  for (int t = 0; t < static_cast<int>(OptimizerType::kDense); ++t) {
    ModelConfig config;
    config.optimizer.type = static_cast<OptimizerType>(t);
    if (IsBinaryClassifier(config.optimizer.type)) config.loss = LossType::kHinge;
    // FTRL's weights read the round: L1 = 0.001 t, some exact zeros.
    config.optimizer.ftrl.lambda1 = 0.001;
    config.optimizer.ftrl.lambda1_times_t = true;
    out.push_back(config);
  }
  ModelConfig dense;
  EXPECT_TRUE(SetOptimizerName("ada_full", &dense).ok());
  dense.hashing.bits = 4;  // keys 1..30 partly beyond the 16 slots
  out.push_back(dense);
  ModelConfig variants;
  variants.variants.push_back(AdagradVariant());
  out.push_back(variants);
  return out;
}

TEST(Weights, DotValuesIsMarginBitForBit) {
  for (const ModelConfig& config : EveryKind()) {
    auto model = *CreateModel(config);
    const std::string name = OptimizerName(config) + (config.variants.empty() ? "" : "+variants");
    LearnAll(*model, Stream(300, 10));
    for (const Labeled& l : Stream(50, 11)) {
      std::vector<HashedFeature> x = l.features;
      x.push_back({12345, 0.75f});  // not held
      std::vector<double> w(x.size());
      model->Weights(x, absl::MakeSpan(w));
      double dot = 0;
      for (size_t i = 0; i < x.size(); ++i) dot += w[i] * x[i].value;
      EXPECT_EQ(dot, model->Margin(x)) << name;
      EXPECT_EQ(w.back(), 0.0) << name;
    }
  }
}

TEST(Weights, AreNotAllZeroAfterLearning) {
  for (const ModelConfig& config : EveryKind()) {
    auto model = *CreateModel(config);
    LearnAll(*model, Stream(300, 12));
    const std::vector<HashedFeature> x = Probe();
    std::vector<double> w(x.size());
    model->Weights(x, absl::MakeSpan(w));
    int nonzero = 0;
    for (double v : w) nonzero += v != 0;
    EXPECT_GT(nonzero, 0) << OptimizerName(config);
  }
}

TEST(Uncertainty, VariantsScoreWithTheChampion) {
  ModelConfig config;
  config.optimizer.ftrl.alpha = 0.0005;  // the primary learns far too slowly
  config.variants.push_back(AdagradVariant());
  auto model = *CreateModel(config);
  const auto* variants = dynamic_cast<const VariantModel*>(model.get());
  ASSERT_NE(variants, nullptr);
  LearnAll(*model, Stream(12000, 13));
  ASSERT_EQ(variants->Champion(), "ada");
  const Model* ada = ModelForVariant(*model, "")->model;
  const Model* primary = ModelForVariant(*model, kPrimaryVariant)->model;
  ASSERT_EQ(ada, variants->Variant("ada"));
  EXPECT_EQ(model->Uncertainty(Probe()), ada->Uncertainty(Probe()));
  EXPECT_NE(model->Uncertainty(Probe()), primary->Uncertainty(Probe()));
  std::vector<double> w(Probe().size()), w_ada(Probe().size());
  model->Weights(Probe(), absl::MakeSpan(w));
  ada->Weights(Probe(), absl::MakeSpan(w_ada));
  EXPECT_EQ(w, w_ada);
}

}  // namespace
}  // namespace clickd
