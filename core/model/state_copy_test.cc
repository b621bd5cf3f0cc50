// Model::BeginStateCopy against ExportState, the plain reference: the same
// bytes for every optimizer (per-coordinate, with a dense block, dense
// models), the digest of a copy in steps (StateDigestUnless, for every
// optimizer and with variants) against StateDigest, and, with learning going on after the copy
// began (on this thread or another, racing the copy's shard reads), exactly the state of a twin
// model that stopped learning at that moment.
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "core/persist/snapshot.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::vector<ModelConfig> AllConfigs() {
  std::vector<ModelConfig> configs;
  for (OptimizerType type :
       {OptimizerType::kFtrl, OptimizerType::kAdagrad, OptimizerType::kAdagradDa,
        OptimizerType::kPcOgd, OptimizerType::kGlobalOgd, OptimizerType::kSgd, OptimizerType::kPa,
        OptimizerType::kCw, OptimizerType::kMetaGradDiag}) {
    ModelConfig c;
    c.optimizer.type = type;
    if (IsBinaryClassifier(type)) c.loss = LossType::kHinge;
    c.num_shards = 4;
    configs.push_back(c);
  }
  ModelConfig compact;  // FTRL in the compact encoding
  compact.memory.encoding = StateEncoding::kCompact;
  compact.num_shards = 4;
  configs.push_back(compact);
  ModelConfig with_dense;  // FTRL with a dense block
  with_dense.dense_namespaces = {{"emb", 2}};
  with_dense.dense_optimizer.type = DenseOptimizerType::kAdaDiag;
  configs.push_back(with_dense);
  for (const char* dense : {"ada_full", "ada_fd", "metagrad"}) {
    ModelConfig c;
    EXPECT_TRUE(SetOptimizerName(dense, &c).ok()) << dense;
    c.hashing.bits = 4;  // d x d matrices: small, for the sanitizer builds
    configs.push_back(c);
  }
  return configs;
}

// `n` examples over ids 0..199 (so later ones change earlier coordinates)
// plus fresh ids (so they insert new ones), with dense values if declared.
std::vector<Example> Examples(const ModelConfig& config, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Example> out(n);
  for (Example& e : out) {
    e.namespaces.push_back({"f",
                            {Feature::WithId(rng() % 200), Feature::WithId(rng() % 200),
                             Feature::WithId(1000 + rng()), Feature::Named("x", 0.5f)}});
    for (const DenseNamespace& ns : config.dense_namespaces) {
      e.dense.push_back({ns.name, std::vector<float>(ns.dim, (rng() % 100) / 100.0f)});
    }
  }
  return out;
}

void Learn(Model& model, const std::vector<Example>& examples, size_t from, size_t to) {
  std::vector<TrainingExample> batch;
  for (size_t i = from; i < to; ++i) {
    batch.push_back({nullptr, &examples[i], (i % 3 == 0) ? 1.0f : 0.0f, 1.0f});
  }
  LearnBatch(model, batch);
}

std::string Bytes(const Model& model, const Model::State& state) {
  return EncodeSnapshot({model.config(), 7, state});
}

TEST(StateCopy, FinishesWithExportStateBytesForEveryOptimizer) {
  for (const ModelConfig& config : AllConfigs()) {
    SCOPED_TRACE(OptimizerName(config));
    auto model = *CreateModel(config);
    const std::vector<Example> examples = Examples(config, 300, 1);
    Learn(*model, examples, 0, examples.size());
    const Model::State exported = model->ExportState();
    const Model::State copied = model->BeginStateCopy()->Finish();
    EXPECT_EQ(copied.round.t, exported.round.t);
    EXPECT_EQ(copied.state_size, exported.state_size);
    EXPECT_EQ(copied.coordinates, exported.coordinates);
    EXPECT_EQ(copied.dense_state, exported.dense_state);
    EXPECT_EQ(Bytes(*model, copied), Bytes(*model, exported));
  }
}

TEST(StateCopy, IsTheStateWhenItBeganWhileLearningGoesOn) {
  for (const ModelConfig& config : AllConfigs()) {
    SCOPED_TRACE(OptimizerName(config));
    auto model = *CreateModel(config);
    auto twin = *CreateModel(config);
    const std::vector<Example> examples = Examples(config, 600, 2);
    Learn(*model, examples, 0, 200);
    Learn(*twin, examples, 0, 200);
    std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
    Learn(*model, examples, 200, 400);  // changes and inserts after the moment
    // And more while the copy reads its shards.
    std::thread learner([&] { Learn(*model, examples, 400, 600); });
    const Model::State copied = copy->Finish();
    learner.join();
    EXPECT_EQ(Bytes(*model, copied), Bytes(*twin, twin->ExportState()));
    // The model itself learned everything.
    Learn(*twin, examples, 200, 600);
    EXPECT_EQ(model->SerializeState(), twin->SerializeState());
  }
}

// ReadShards then Finish (the snapshotter's split: shards read at normal
// priority, encoded at a low one) gives the same bytes, and what is
// learned between the two is not in the copy.
TEST(StateCopy, ReadShardsThenFinishIsTheStateWhenItBegan) {
  for (const ModelConfig& config : AllConfigs()) {
    SCOPED_TRACE(OptimizerName(config));
    auto model = *CreateModel(config);
    auto twin = *CreateModel(config);
    const std::vector<Example> examples = Examples(config, 600, 3);
    Learn(*model, examples, 0, 200);
    Learn(*twin, examples, 0, 200);
    std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
    Learn(*model, examples, 200, 400);
    copy->ReadShards();
    Learn(*model, examples, 400, 600);  // after the read: no copy-on-write left
    const Model::State copied = copy->Finish();
    EXPECT_EQ(Bytes(*model, copied), Bytes(*twin, twin->ExportState()));
    // The next copy copies on write again (the first one ended at ReadShards).
    std::unique_ptr<Model::StateCopy> next = model->BeginStateCopy();
    Learn(*twin, examples, 200, 600);
    EXPECT_EQ(Bytes(*model, next->Finish()), Bytes(*twin, twin->ExportState()));
  }
}

TEST(StateCopy, ASecondCopyWhileOneIsOpenIsEagerAndBothAreExact) {
  ModelConfig config;
  config.num_shards = 8;
  auto model = *CreateModel(config);
  auto twin = *CreateModel(config);
  const std::vector<Example> examples = Examples(config, 300, 3);
  Learn(*model, examples, 0, 100);
  Learn(*twin, examples, 0, 100);
  const std::string at_100 = Bytes(*twin, twin->ExportState());
  std::unique_ptr<Model::StateCopy> first = model->BeginStateCopy();
  Learn(*model, examples, 100, 200);
  Learn(*twin, examples, 100, 200);
  std::unique_ptr<Model::StateCopy> second = model->BeginStateCopy();
  Learn(*model, examples, 200, 300);
  EXPECT_EQ(Bytes(*model, second->Finish()), Bytes(*twin, twin->ExportState()));
  EXPECT_EQ(Bytes(*model, first->Finish()), at_100);
}

TEST(StateCopy, ACopyDroppedUnfinishedLetsTheNextOneCopyOnWrite) {
  ModelConfig config;
  auto model = *CreateModel(config);
  auto twin = *CreateModel(config);
  const std::vector<Example> examples = Examples(config, 300, 4);
  Learn(*model, examples, 0, 100);
  model->BeginStateCopy().reset();
  Learn(*model, examples, 100, 200);
  Learn(*twin, examples, 0, 200);
  std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
  Learn(*model, examples, 200, 300);
  EXPECT_EQ(Bytes(*model, copy->Finish()), Bytes(*twin, twin->ExportState()));
}

// GetModel's state_digest: the digest of a copy, in steps, is the model's
// StateDigest, also with variants; a stop ends it with the stop's error.
TEST(StateCopy, DigestInStepsIsTheModelsDigest) {
  std::vector<ModelConfig> configs = AllConfigs();
  ModelConfig with_variants;
  with_variants.num_shards = 4;
  with_variants.variants.push_back({"ada", {}});
  with_variants.variants.back().optimizer.type = OptimizerType::kAdagrad;
  configs.push_back(with_variants);
  const std::function<absl::Status()> never = [] { return absl::OkStatus(); };
  for (const ModelConfig& config : configs) {
    SCOPED_TRACE(OptimizerName(config));
    auto model = *CreateModel(config);
    const std::vector<Example> examples = Examples(config, 300, 5);
    Learn(*model, examples, 0, examples.size());
    std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
    EXPECT_EQ(*StateDigestUnless(*copy, never), StateDigest(*model));
  }
}

TEST(StateCopy, DigestInStepsStopsAtTheFirstErrorOfStop) {
  ModelConfig config;
  config.num_shards = 8;
  auto model = *CreateModel(config);
  const std::vector<Example> examples = Examples(config, 300, 6);
  Learn(*model, examples, 0, examples.size());
  const std::string whole = StateDigest(*model);
  // Asked at least once per shard: stopping at each ask in turn ends the
  // digest there, and the model's next copy copies on write again.
  int asks = 0;
  for (int stop_at = 1; stop_at <= 8; ++stop_at) {
    int asked = 0;
    std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
    const absl::StatusOr<std::string> digest = StateDigestUnless(*copy, [&] {
      return ++asked == stop_at ? absl::DeadlineExceededError("the deadline passed")
                                : absl::OkStatus();
    });
    EXPECT_EQ(digest.status(), absl::DeadlineExceededError("the deadline passed")) << stop_at;
    asks = asked;
  }
  EXPECT_EQ(asks, 8);
  std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
  Learn(*model, examples, 0, 10);  // copy-on-write: not in the copy
  EXPECT_EQ(*StateDigestUnless(*copy, [] { return absl::OkStatus(); }), whole);
}

}  // namespace
}  // namespace clickd
