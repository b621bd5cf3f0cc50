// A model with ModelConfig::factorization learns and serves its factors
// (docs/factorization.md): the pairwise margin is part of Learn's and
// Predict's margins, a shared context scores as the merged example, and
// the factors are part of the state that snapshots and digests carry.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using Kind = FactorizationConfig::Kind;

ModelConfig Config(Kind kind) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kFtrl;
  config.hashing.bits = 20;
  config.num_shards = 4;
  config.factorization.kind = kind;
  if (kind != Kind::kNone) config.factorization.fields = {"user", "ad", "site"};
  return config;
}

std::unique_ptr<Model> Make(const ModelConfig& config) {
  auto model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

Example Ex(int user, int ad, int site) {
  Example e;
  e.namespaces.push_back({"user", {Feature::WithId(static_cast<uint64_t>(user))}});
  e.namespaces.push_back({"ad", {Feature::WithId(static_cast<uint64_t>(ad))}});
  e.namespaces.push_back({"site", {Feature::WithId(static_cast<uint64_t>(site))}});
  return e;
}

// A log whose truth is a latent user x ad interaction (and nothing a
// linear model without crosses can represent): p = sigmoid(3 <u, a> - 1.5)
// with 2-dimensional latent vectors of +-1 entries / sqrt(2).
struct LatentLog {
  std::vector<Example> examples;
  std::vector<float> labels;
  std::vector<double> truth;  // the clicks' probabilities
};

LatentLog MakeLatentLog(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int kUsers = 30, kAds = 30, kSites = 5;
  std::vector<std::array<double, 2>> u(kUsers), a(kAds);
  std::uniform_int_distribution<int> sign(0, 1);
  for (auto& v : u) v = {sign(rng) ? 1.0 : -1.0, sign(rng) ? 1.0 : -1.0};
  for (auto& v : a) v = {sign(rng) ? 1.0 : -1.0, sign(rng) ? 1.0 : -1.0};
  LatentLog log;
  std::uniform_int_distribution<int> pu(0, kUsers - 1), pa(0, kAds - 1), ps(0, kSites - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < n; ++i) {
    const int user = pu(rng), ad = pa(rng);
    const double dot = 0.5 * (u[user][0] * a[ad][0] + u[user][1] * a[ad][1]);
    const double p = 1 / (1 + std::exp(-(3 * dot - 1.5)));
    log.examples.push_back(Ex(user, ad, ps(rng)));
    log.labels.push_back(unit(rng) < p ? 1.0f : 0.0f);
    log.truth.push_back(p);
  }
  return log;
}

double LogLoss(double margin, float label) { return Loss(LossType::kLogistic, margin, label); }

// Progressive logloss of the last `tail` examples, learned one by one
// through LearnBatch (the one learning path).
double ProgressiveTailLoss(Model& model, const LatentLog& log, int tail) {
  double loss = 0;
  const int n = static_cast<int>(log.examples.size());
  for (int i = 0; i < n; ++i) {
    const TrainingExample e{nullptr, &log.examples[i], log.labels[i], 1.0f};
    const std::vector<ScoredExample> scored = LearnBatch(model, {&e, 1});
    if (i >= n - tail) loss += LogLoss(scored[0].margin, log.labels[i]);
  }
  return loss / tail;
}

class FactorModel : public ::testing::TestWithParam<Kind> {};

TEST_P(FactorModel, LearnsALatentInteractionALinearModelCannot) {
  const LatentLog log = MakeLatentLog(60000, 7);
  auto linear = Make(Config(Kind::kNone));
  auto factored = Make(Config(GetParam()));
  const double linear_loss = ProgressiveTailLoss(*linear, log, 20000);
  const double factored_loss = ProgressiveTailLoss(*factored, log, 20000);
  double bayes = 0;
  for (int i = 40000; i < 60000; ++i) {
    bayes += LogLoss(std::log(log.truth[i] / (1 - log.truth[i])), log.labels[i]);
  }
  bayes /= 20000;
  // The linear model cannot represent the interaction; the factors can:
  // at least half the linear model's excess over the Bayes loss is gone.
  EXPECT_LT(factored_loss - bayes, 0.5 * (linear_loss - bayes))
      << "linear " << linear_loss << " factored " << factored_loss << " bayes " << bayes;
}

TEST_P(FactorModel, PredictIsThePreUpdateMarginOfLearn) {
  auto model = Make(Config(GetParam()));
  const LatentLog log = MakeLatentLog(2000, 3);
  for (size_t i = 0; i < log.examples.size(); ++i) {
    const TrainingExample e{nullptr, &log.examples[i], log.labels[i], 1.0f};
    LearnBatch(*model, {&e, 1});
  }
  // Every key of the probe is held: its Predict is what its step sees.
  const Example probe = log.examples[17];
  std::vector<HashedFeature> features;
  model->hasher().Hash(probe, &features);
  const double predicted = model->Margin(features);
  const double learned = model->Learn(features, 1.0, 1.0);
  EXPECT_DOUBLE_EQ(predicted, learned);
  // ... and the pairwise part is in it.
  std::vector<double> weights(features.size());
  model->Weights(features, absl::MakeSpan(weights));
  double linear = 0;
  for (size_t i = 0; i < features.size(); ++i) linear += weights[i] * features[i].value;
  EXPECT_GT(std::abs(learned - linear), 1e-6);
}

TEST_P(FactorModel, ASharedContextScoresAsTheMergedExample) {
  auto model = Make(Config(GetParam()));
  const LatentLog log = MakeLatentLog(3000, 5);
  for (size_t i = 0; i < log.examples.size(); ++i) {
    const TrainingExample e{nullptr, &log.examples[i], log.labels[i], 1.0f};
    LearnBatch(*model, {&e, 1});
  }
  // Context: the user and the site; candidates: ads, one repeating the
  // context's user (one merged feature of value 2).
  Example context;
  context.namespaces.push_back({"user", {Feature::WithId(4)}});
  context.namespaces.push_back({"site", {Feature::WithId(2)}});
  std::vector<Example> candidates;
  for (int ad : {1, 5, 9}) {
    Example c;
    c.namespaces.push_back({"ad", {Feature::WithId(static_cast<uint64_t>(ad))}});
    candidates.push_back(c);
  }
  candidates[2].namespaces.push_back({"user", {Feature::WithId(4)}});
  const std::vector<CandidateScore> scores = ScoreCandidates(*model, context, candidates);
  ASSERT_EQ(scores.size(), candidates.size());
  for (size_t k = 0; k < candidates.size(); ++k) {
    Example merged = candidates[k];
    for (const Namespace& ns : context.namespaces) merged.namespaces.push_back(ns);
    std::vector<HashedFeature> features;
    model->hasher().Hash(merged, &features);
    EXPECT_NEAR(scores[k].margin, model->Margin(features), 1e-9) << "candidate " << k;
  }
}

TEST_P(FactorModel, EqualExamplesGiveEqualDigestsAndARestoreKeepsIt) {
  const ModelConfig config = Config(GetParam());
  auto a = Make(config);
  auto b = Make(config);
  const LatentLog log = MakeLatentLog(3000, 11);
  for (size_t i = 0; i < log.examples.size(); ++i) {
    const TrainingExample e{nullptr, &log.examples[i], log.labels[i], 1.0f};
    LearnBatch(*a, {&e, 1});
    LearnBatch(*b, {&e, 1});
  }
  EXPECT_EQ(StateDigest(*a), StateDigest(*b));
  const Model::State state = a->ExportState();
  EXPECT_FALSE(state.factors.empty());
  EXPECT_TRUE(StateIsFinite(state));
  // The digest covers the factors: a model with the same coordinates and
  // other factors differs.
  Model::State other = state;
  other.factors[sizeof(uint64_t)] ^= 1;
  auto c = Make(config);
  ASSERT_TRUE(c->ImportState(other).ok());
  EXPECT_NE(StateDigest(*c), StateDigest(*a));
  // A restore gives the digest back, and so does the off-path copy.
  auto restored = Make(config);
  ASSERT_TRUE(restored->ImportState(state).ok());
  EXPECT_EQ(StateDigest(*restored), StateDigest(*a));
  EXPECT_EQ(restored->Predict(log.examples[3]), a->Predict(log.examples[3]));
  auto copy = a->BeginStateCopy();
  auto digest = StateDigestUnless(*copy, [] { return absl::OkStatus(); });
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(*digest, StateDigest(*a));
  // LearnExclusive (offline replay) learns as LearnBatch does.
  auto exclusive = Make(config);
  std::vector<std::vector<HashedFeature>> hashed(log.examples.size());
  std::vector<Model::LearnItem> items;
  for (size_t i = 0; i < log.examples.size(); ++i) {
    exclusive->hasher().Hash(log.examples[i], &hashed[i]);
    items.push_back({hashed[i], log.labels[i], 1.0});
  }
  std::vector<double> margins(items.size());
  exclusive->LearnExclusive(items, absl::MakeSpan(margins));
  EXPECT_EQ(StateDigest(*exclusive), StateDigest(*a));
}

TEST_P(FactorModel, ImportRefusesFactorsThatDoNotFit) {
  auto model = Make(Config(GetParam()));
  const Example e = Ex(1, 2, 3);
  model->Learn(
      [&] {
        std::vector<HashedFeature> f;
        model->hasher().Hash(e, &f);
        return f;
      }(),
      1.0, 1.0);
  Model::State state = model->ExportState();
  auto linear = Make(Config(Kind::kNone));
  EXPECT_EQ(linear->ImportState(state).code(), absl::StatusCode::kDataLoss);
  Model::State cut = state;
  cut.factors.pop_back();
  EXPECT_EQ(model->ImportState(cut).code(), absl::StatusCode::kDataLoss);
  // A refused import changed nothing.
  EXPECT_EQ(model->ExportState().factors, state.factors);
}

TEST_P(FactorModel, ExtremeInputsNeverMakeAFactorNonFinite) {
  auto model = Make(Config(GetParam()));
  const float big = std::numeric_limits<float>::max();
  for (int i = 0; i < 200; ++i) {
    Example e;
    e.namespaces.push_back({"user", {Feature::WithId(1, i % 2 ? big : -big)}});
    e.namespaces.push_back({"ad", {Feature::WithId(2, big)}});
    e.namespaces.push_back({"site", {Feature::WithId(3, 1e-30f)}});
    std::vector<HashedFeature> f;
    model->hasher().Hash(e, &f);
    model->Learn(f, i % 3 == 0 ? 1.0 : 0.0, 1.0);
  }
  const Model::State state = model->ExportState();
  EXPECT_FALSE(state.factors.empty());
  EXPECT_TRUE(StateIsFinite(state));
}

INSTANTIATE_TEST_SUITE_P(FmAndFfm, FactorModel, ::testing::Values(Kind::kFm, Kind::kFfm),
                         [](const auto& info) {
                           return info.param == Kind::kFm ? std::string("Fm") : std::string("Ffm");
                         });

// The keys of a state's factor rows.
std::vector<uint64_t> FactorKeys(const Model::State& state) {
  std::vector<uint64_t> keys;
  const size_t record = sizeof(uint64_t) + state.factor_size;
  for (size_t at = 0; at < state.factors.size(); at += record) {
    uint64_t key;
    std::memcpy(&key, state.factors.data() + at, sizeof(key));
    keys.push_back(key);
  }
  return keys;
}

TEST(FactorModelTtl, ATtlEvictsAFactorRowWithItsCoordinate) {
  ModelConfig config = Config(Kind::kFfm);
  config.memory.ttl_rounds = 800;
  auto model = Make(config);
  auto twin = Make(config);
  std::vector<HashedFeature> once;
  model->hasher().Hash(Ex(1000, 1000, 1000), &once);
  model->Learn(once, 1.0, 1.0);
  twin->Learn(once, 1.0, 1.0);
  std::vector<uint64_t> keys = FactorKeys(model->ExportState());
  ASSERT_EQ(keys.size(), 3u);
  const uint64_t user = keys[0];
  std::vector<HashedFeature> f;
  for (int i = 0; i < 3000; ++i) {
    f.clear();
    model->hasher().Hash(Ex(i % 7, i % 5, i % 3), &f);
    model->Learn(f, i % 4 == 0 ? 1.0 : 0.0, 1.0);
    twin->Learn(f, i % 4 == 0 ? 1.0 : 0.0, 1.0);
  }
  keys = FactorKeys(model->ExportState());
  EXPECT_EQ(std::count(keys.begin(), keys.end(), user), 0);
  EXPECT_EQ(keys.size(), 7u + 5u + 3u);
  EXPECT_GT(model->Stats().coordinates_expired, 0u);
  EXPECT_EQ(StateDigest(*model), StateDigest(*twin));
  // A restored model evicts alike; the compact encoding stays refused.
  auto restored = Make(config);
  ASSERT_TRUE(restored->ImportState(model->ExportState()).ok());
  EXPECT_EQ(StateDigest(*restored), StateDigest(*model));
  config.memory.encoding = StateEncoding::kCompact;
  const absl::Status refused = ValidateModelConfig(config);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("memory.encoding"), std::string::npos) << refused;
}

// Under a memory budget the coordinates' tables and the factor rows
// together stay within memory.max_bytes; a coordinate the budget evicts
// takes its factor row with it (rows never outnumber coordinates, and a
// row's key is a coordinate's), and twins and a restore agree.
TEST(FactorModelBudget, TheBudgetCountsAndEvictsFactorRows) {
  ModelConfig config = Config(Kind::kFfm);
  config.factorization.dim = 8;  // a row of 3 x 8 x 2 floats: 200 bytes
  config.memory.max_bytes = 1 << 18;
  auto model = Make(config);
  auto twin = Make(config);
  std::vector<HashedFeature> f;
  for (int i = 0; i < 20000; ++i) {
    f.clear();
    model->hasher().Hash(Ex(i, i % 4000, i % 50), &f);
    model->Learn(f, i % 3 == 0 ? 1.0 : 0.0, 1.0);
    twin->Learn(f, i % 3 == 0 ? 1.0 : 0.0, 1.0);
    if (i % 1000 == 999) {
      const ModelStats stats = model->Stats();
      ASSERT_LE(stats.bytes, config.memory.max_bytes) << i;
    }
  }
  const ModelStats stats = model->Stats();
  EXPECT_GT(stats.coordinates_evicted, 10000u);
  const Model::State state = model->ExportState();
  const std::vector<uint64_t> rows = FactorKeys(state);
  // 20,000 users alone would need 4 MB of rows.
  EXPECT_GT(rows.size(), 100u);
  EXPECT_LE(rows.size(), stats.coordinates);
  std::set<uint64_t> coordinates;
  for (size_t at = 0; at < state.coordinates.size(); at += sizeof(uint64_t) + state.state_size) {
    uint64_t key;
    std::memcpy(&key, state.coordinates.data() + at, sizeof(key));
    coordinates.insert(key);
  }
  ASSERT_EQ(coordinates.size(), stats.coordinates);
  for (uint64_t key : rows) EXPECT_EQ(coordinates.count(key), 1u) << key;
  EXPECT_EQ(StateDigest(*model), StateDigest(*twin));
  auto restored = Make(config);
  ASSERT_TRUE(restored->ImportState(state).ok());
  EXPECT_EQ(StateDigest(*restored), StateDigest(*model));
}

TEST(FactorModelDigest, AModelWithoutFactorsSerializesAsBefore) {
  auto model = Make(Config(Kind::kNone));
  std::vector<HashedFeature> f;
  model->hasher().Hash(Ex(1, 2, 3), &f);
  model->Learn(f, 1.0, 1.0);
  const Model::State state = model->ExportState();
  EXPECT_TRUE(state.factors.empty());
  EXPECT_EQ(state.factor_size, 0u);
}

}  // namespace
}  // namespace clickd
