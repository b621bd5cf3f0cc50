// HashPredictRequest + ScoreCandidates(model, hashed) against the Example
// path they replace (wire/example_proto.h's ToExample, CheckDenseValues,
// ScoreCandidates(model, context, candidates)): the same scores bit for bit
// for every optimizer, and the same error for every bad input.
#include "wire/predict_request.h"

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/serving.h"
#include "core/model/state_digest.h"
#include "gtest/gtest.h"
#include "wire/example_proto.h"

namespace clickd {
namespace {

// The old path: convert every example, check dense values, score.
absl::StatusOr<std::vector<CandidateScore>> ScoreByExamples(const v1::PredictRequest& request,
                                                            const Model& model,
                                                            const ExampleLimits& limits) {
  auto context = ToExample(request.context(), "context", limits);
  if (!context.ok()) return context.status();
  const size_t n = request.candidates_size();
  std::vector<Example> candidates(n);
  for (size_t i = 0; i < n; ++i) {
    auto c = ToExample(request.candidates(i), absl::StrCat("candidates[", i, "]"), limits);
    if (!c.ok()) return c.status();
    candidates[i] = *std::move(c);
  }
  for (size_t i = 0; i < n; ++i) {
    absl::Status s = CheckDenseValues(model, &*context, "context", candidates[i],
                                      absl::StrCat("candidates[", i, "]"));
    if (!s.ok()) return s;
  }
  return ScoreCandidates(model, *context, candidates);
}

absl::StatusOr<std::vector<CandidateScore>> ScoreHashed(const v1::PredictRequest& request,
                                                        const Model& model,
                                                        const ExampleLimits& limits) {
  HashedCandidates hashed;
  if (absl::Status s = HashPredictRequest(request, model, limits, &hashed); !s.ok()) return s;
  return ScoreCandidates(model, hashed);
}

class RandomRequests {
 public:
  explicit RandomRequests(uint32_t seed) : rng_(seed) {}

  // Namespaces u, a, p (crossed by the configs below) and x, repeated at
  // times; names and ids from small vocabularies, so that keys repeat;
  // values unset, 0, negative, fractional or large. Dense values of `emb`
  // (dim 3) in the context or `pos` (dim 2) in a candidate, at times.
  v1::Example Example(bool context) {
    v1::Example e;
    const int namespaces = Uniform(0, 4);
    for (int n = 0; n < namespaces; ++n) {
      v1::Namespace* ns = e.add_namespaces();
      ns->set_name(std::string(1, "uapx"[Uniform(0, 3)]));
      const int features = Uniform(0, 6);
      for (int f = 0; f < features; ++f) {
        v1::Feature* feature = ns->add_features();
        if (Uniform(0, 2) == 0) {
          feature->set_id(Uniform(0, 20));
        } else {
          feature->set_name(absl::StrCat("f=", Uniform(0, 20)));
        }
        static constexpr float kValues[] = {0.0f, 0.5f, -2.0f, 3e5f, 1.0f, 7.25f};
        if (Uniform(0, 1) == 0) feature->set_value(kValues[Uniform(0, 5)]);
      }
    }
    if (Uniform(0, 2) == 0) {
      v1::DenseValues* d = e.add_dense();
      d->set_namespace_(context ? "emb" : "pos");
      for (int j = 0; j < (context ? 3 : 2); ++j) d->add_values(Uniform(-100, 100) / 7.0f);
    }
    return e;
  }

  v1::PredictRequest Request() {
    v1::PredictRequest request;
    request.set_model("default");
    if (Uniform(0, 3) > 0) *request.mutable_context() = Example(true);
    const int n = Uniform(1, 8);
    for (int i = 0; i < n; ++i) *request.add_candidates() = Example(false);
    return request;
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  std::mt19937 rng_;
};

// Every optimizer (each per-coordinate one, and the dense learners as the
// whole model), with crosses of two and three namespaces (one a square),
// folding, the bias and two dense namespaces.
std::vector<ModelConfig> AllConfigs() {
  std::vector<std::string> names = {
      "ftrl", "adagrad",       "adagrad_da", "pc_ogd", "global_ogd", "sgd", "pa",
      "cw",   "metagrad_diag", "ada_diag",   "ada_fd", "ada_full",   "ons", "metagrad"};
  std::vector<ModelConfig> configs;
  for (const std::string& name : names) {
    ModelConfig c;
    EXPECT_TRUE(SetOptimizerName(name, &c).ok()) << name;
    if (name == "pa" || name == "cw") c.loss = LossType::kHinge;
    c.hashing.interactions = {{"u", "a"}, {"a", "a"}, {"u", "a", "p"}};
    c.hashing.bits = c.optimizer.type == OptimizerType::kDense ? 4 : 20;  // small full matrices
    // PA and CW take no dense block.
    if (name != "pa" && name != "cw") c.dense_namespaces = {{"emb", 3}, {"pos", 2}};
    c.dense_optimizer.tau = 4;  // at most the dense block's dimension
    configs.push_back(c);
  }
  return configs;
}

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }

TEST(HashPredictRequest, ScoresAsTheExamplePathBitForBit) {
  const ExampleLimits limits;
  for (const ModelConfig& config : AllConfigs()) {
    const std::string name = OptimizerName(config);
    auto model = CreateModel(config);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    RandomRequests random(17);
    // Teach the model from the same kind of examples, so weights are set.
    for (int step = 0; step < 200; ++step) {
      const v1::PredictRequest r = random.Request();
      auto context = ToExample(r.context(), "context", limits);
      auto example = ToExample(r.candidates(0), "candidates[0]", limits);
      ASSERT_TRUE(context.ok() && example.ok());
      if ((*model)->dense_block() == nullptr) {
        context->dense.clear();
        example->dense.clear();
      }
      const float label = step % 3 == 0 ? 1.0f : (config.loss == LossType::kHinge ? -1.0f : 0.0f);
      const TrainingExample t{&*context, &*example, label, 1.0f};
      LearnBatch(**model, {&t, 1});
    }
    int nonzero = 0;  // margins compared that the teaching moved
    for (int trial = 0; trial < 600; ++trial) {
      v1::PredictRequest r = random.Request();
      // Without a dense block, half the requests carry none (the others are
      // refused alike).
      if ((*model)->dense_block() == nullptr && trial % 2 == 0) {
        r.mutable_context()->clear_dense();
        for (v1::Example& c : *r.mutable_candidates()) c.clear_dense();
      }
      auto old_scores = ScoreByExamples(r, **model, limits);
      auto new_scores = ScoreHashed(r, **model, limits);
      ASSERT_EQ(old_scores.ok(), new_scores.ok()) << name << " " << r.ShortDebugString();
      if (!old_scores.ok()) {
        EXPECT_EQ(old_scores.status(), new_scores.status()) << name;
        continue;
      }
      ASSERT_EQ(old_scores->size(), new_scores->size());
      for (size_t i = 0; i < old_scores->size(); ++i) {
        EXPECT_EQ(Bits((*old_scores)[i].margin), Bits((*new_scores)[i].margin))
            << name << " candidate " << i << ": " << (*old_scores)[i].margin << " vs "
            << (*new_scores)[i].margin;
        EXPECT_EQ(Bits((*old_scores)[i].prediction), Bits((*new_scores)[i].prediction)) << name;
        nonzero += (*old_scores)[i].margin != 0;
      }
    }
    EXPECT_GT(nonzero, 300) << name;
  }
}

TEST(HashPredictRequest, HashesAsHashContextAndHashCandidate) {
  ModelConfig config;
  config.hashing.interactions = {{"u", "a"}, {"a", "a", "a"}};
  config.hashing.bits = 12;  // folding collisions merge
  auto model = *CreateModel(config);
  const ExampleLimits limits;
  RandomRequests random(3);
  for (int trial = 0; trial < 300; ++trial) {
    v1::PredictRequest r = random.Request();
    r.mutable_context()->clear_dense();
    for (v1::Example& c : *r.mutable_candidates()) c.clear_dense();
    HashedCandidates hashed;
    ASSERT_TRUE(HashPredictRequest(r, *model, limits, &hashed).ok());
    const Example context = *ToExample(r.context(), "context", limits);
    HashedContext want_context;
    model->hasher().HashContext(context, &want_context);
    EXPECT_EQ(hashed.context.features, want_context.features);
    ASSERT_EQ(hashed.ends.size(), static_cast<size_t>(r.candidates_size()));
    size_t begin = 0;
    for (int i = 0; i < r.candidates_size(); ++i) {
      std::vector<HashedFeature> want;
      model->hasher().HashCandidate(want_context, *ToExample(r.candidates(i), "candidate", limits),
                                    &want);
      const std::vector<HashedFeature> got(hashed.features.begin() + begin,
                                           hashed.features.begin() + hashed.ends[i]);
      EXPECT_EQ(got, want) << i;
      begin = hashed.ends[i];
    }
    EXPECT_TRUE(hashed.dense.empty());
  }
}

// Each bad input, in the context or in a candidate, gives the Example
// path's error: the same code and message.
TEST(HashPredictRequest, RefusesAsTheExamplePath) {
  ExampleLimits limits;
  limits.max_namespaces_per_example = 3;
  limits.max_features_per_example = 8;
  limits.max_name_bytes = 10;
  ModelConfig with_dense;
  with_dense.hashing.interactions = {{"u", "a"}};
  with_dense.dense_namespaces = {{"emb", 3}, {"pos", 2}};
  with_dense.dense_optimizer.tau = 4;
  ModelConfig without_dense;
  using Mutation = void (*)(v1::Example*);
  const std::vector<std::pair<std::string, Mutation>> mutations = {
      {"too many namespaces",
       [](v1::Example* e) {
         for (int i = 0; i < 4; ++i) e->add_namespaces()->set_name("x");
       }},
      {"too many features",
       [](v1::Example* e) {
         v1::Namespace* ns = e->add_namespaces();
         for (int i = 0; i < 9; ++i) ns->add_features()->set_id(i);
       }},
      {"long namespace name", [](v1::Example* e) { e->add_namespaces()->set_name("abcdefghijk"); }},
      {"empty feature name",
       [](v1::Example* e) { e->add_namespaces()->add_features()->set_name(""); }},
      {"long feature name",
       [](v1::Example* e) { e->add_namespaces()->add_features()->set_name("abcdefghijk"); }},
      {"no key", [](v1::Example* e) { e->add_namespaces()->add_features()->set_value(2); }},
      {"nan value",
       [](v1::Example* e) {
         v1::Feature* f = e->add_namespaces()->add_features();
         f->set_id(1);
         f->set_value(std::nanf(""));
       }},
      {"infinite value",
       [](v1::Example* e) {
         v1::Feature* f = e->add_namespaces()->add_features();
         f->set_name("n");
         f->set_value(-INFINITY);
       }},
      {"value beyond the limit",
       [](v1::Example* e) {
         v1::Feature* f = e->add_namespaces()->add_features();
         f->set_name("n");
         f->set_value(2e6f);
       }},
      {"too many dense values",
       [](v1::Example* e) {
         v1::DenseValues* d = e->add_dense();
         d->set_namespace_("emb");
         for (int i = 0; i <= kMaxDenseDim; ++i) d->add_values(0);
       }},
      {"long dense namespace",
       [](v1::Example* e) {
         v1::DenseValues* d = e->add_dense();
         d->set_namespace_("abcdefghijk");
       }},
      {"unknown dense namespace",
       [](v1::Example* e) {
         v1::DenseValues* d = e->add_dense();
         d->set_namespace_("other");
         d->add_values(1);
       }},
      {"wrong dense dimension",
       [](v1::Example* e) {
         v1::DenseValues* d = e->add_dense();
         d->set_namespace_("emb");
         d->add_values(1);
       }},
      {"nan dense value",
       [](v1::Example* e) {
         v1::DenseValues* d = e->add_dense();
         d->set_namespace_("pos");
         d->add_values(1);
         d->add_values(std::nanf(""));
       }},
      {"packed values for fewer names",
       [](v1::Example* e) {
         v1::Namespace* ns = e->add_namespaces();
         ns->add_names("n");
         ns->add_values(1);
         ns->add_values(2);
       }},
      {"packed nan value",
       [](v1::Example* e) {
         v1::Namespace* ns = e->add_namespaces();
         ns->add_ids(1);
         ns->add_id_values(std::nanf(""));
       }},
      {"packed infinite key value",
       [](v1::Example* e) {
         v1::Namespace* ns = e->add_namespaces();
         ns->add_keys(1);
         ns->add_key_values(INFINITY);
       }},
      {"packed empty name", [](v1::Example* e) { e->add_namespaces()->add_names(""); }},
      {"too many packed features",
       [](v1::Example* e) {
         v1::Namespace* ns = e->add_namespaces();
         for (int i = 0; i < 9; ++i) ns->add_keys(i);
       }},
      {"dense namespace twice",
       [](v1::Example* e) {
         for (int k = 0; k < 2; ++k) {
           v1::DenseValues* d = e->add_dense();
           d->set_namespace_("pos");
           d->add_values(1);
           d->add_values(2);
         }
       }},
  };
  for (const ModelConfig& config : {with_dense, without_dense}) {
    auto model = *CreateModel(config);
    for (const auto& [what, mutate] : mutations) {
      // In the context, in the first and in a later candidate, after valid
      // features (so that the bad one is not at index 0).
      for (int where : {-1, 0, 2}) {
        RandomRequests random(5);
        v1::PredictRequest r;
        r.set_model("default");
        r.mutable_context()->add_namespaces()->add_features()->set_name("ok");
        for (int i = 0; i < 3; ++i) r.add_candidates()->add_namespaces()->add_features()->set_id(i);
        mutate(where < 0 ? r.mutable_context() : r.mutable_candidates(where));
        auto want = ScoreByExamples(r, *model, limits);
        auto got = ScoreHashed(r, *model, limits);
        ASSERT_FALSE(want.ok()) << what;
        EXPECT_EQ(got.status(), want.status()) << what << " at " << where;
      }
    }
  }
}

// How a test writes an example's features on the wire.
// kUnitKeys: keys as kKeys, but a run of features valued 1 goes without
// key_values (the form a client sends for unweighted features).
enum class Form { kFeatures, kPacked, kKeys, kUnitKeys };

// Rewrites `e`'s Feature messages in `form`: packed names and ids, or keys
// hashed as a client does (docs/hashing.md). Each run of names or of ids
// becomes a namespace of its own, with the same name, so that features
// keep their order (and hashed lists compare exactly).
v1::Example Rewrite(const v1::Example& e, Form form, const FeatureHasher& hasher) {
  if (form == Form::kFeatures) return e;
  v1::Example out;
  *out.mutable_dense() = e.dense();
  for (const v1::Namespace& ns : e.namespaces()) {
    const uint64_t ns_hash = hasher.NamespaceHash(ns.name());
    v1::Namespace* run = out.add_namespaces();
    run->set_name(ns.name());
    int run_kind = -1;  // 0 names, 1 ids; kUnitKeys: 2 unit keys, 3 valued keys
    for (const v1::Feature& f : ns.features()) {
      const int kind = f.key_case() == v1::Feature::kId ? 1 : 0;
      const float value = f.has_value() ? f.value() : 1.0f;
      const uint64_t key = kind == 1 ? FeatureHasher::IdKey(ns_hash, f.id())
                                     : FeatureHasher::NamedKey(ns_hash, f.name());
      if (form == Form::kKeys) {
        run->add_keys(key);
        run->add_key_values(value);
        continue;
      }
      if (form == Form::kUnitKeys) {
        const int key_kind = value == 1.0f ? 2 : 3;
        if (run_kind >= 0 && key_kind != run_kind) {
          run = out.add_namespaces();
          run->set_name(ns.name());
        }
        run_kind = key_kind;
        run->add_keys(key);
        if (key_kind == 3) run->add_key_values(value);
        continue;
      }
      if (run_kind >= 0 && kind != run_kind) {
        run = out.add_namespaces();
        run->set_name(ns.name());
      }
      run_kind = kind;
      if (kind == 1) {
        run->add_ids(f.id());
        run->add_id_values(value);
      } else {
        run->add_names(f.name());
        run->add_values(value);
      }
    }
  }
  return out;
}

v1::PredictRequest Rewrite(const v1::PredictRequest& r, Form form, const FeatureHasher& hasher) {
  v1::PredictRequest out = r;
  *out.mutable_context() = Rewrite(r.context(), form, hasher);
  for (int i = 0; i < r.candidates_size(); ++i) {
    *out.mutable_candidates(i) = Rewrite(r.candidates(i), form, hasher);
  }
  return out;
}

// The same request as Feature messages, packed names and ids, and keys the
// client hashed: the same hashed features, in the same order.
TEST(HashPredictRequest, EveryWireFormHashesAlike) {
  ModelConfig config;
  config.hashing.seed = 99;
  config.hashing.interactions = {{"u", "a"}, {"a", "a"}, {"u", "a", "p"}};
  config.hashing.bits = 14;
  config.dense_namespaces = {{"emb", 3}, {"pos", 2}};
  config.dense_optimizer.tau = 2;
  auto model = *CreateModel(config);
  const ExampleLimits limits;
  RandomRequests random(23);
  for (int trial = 0; trial < 300; ++trial) {
    const v1::PredictRequest r = random.Request();
    HashedCandidates want;
    const absl::Status want_status = HashPredictRequest(r, *model, limits, &want);
    for (Form form : {Form::kPacked, Form::kKeys, Form::kUnitKeys}) {
      HashedCandidates got;
      const absl::Status got_status =
          HashPredictRequest(Rewrite(r, form, model->hasher()), *model, limits, &got);
      ASSERT_EQ(got_status.ok(), want_status.ok()) << got_status << " vs " << want_status;
      if (!want_status.ok()) continue;
      EXPECT_EQ(got.context.features, want.context.features);
      EXPECT_EQ(got.features, want.features);
      EXPECT_EQ(got.ends, want.ends);
    }
  }
}

// An Update learned from each wire form (through ToExample, as the server
// converts one) gives the same model, digest for digest, and each form
// then predicts the same margins.
TEST(ToExample, EveryWireFormLearnsTheSameModel) {
  for (const ModelConfig& base : AllConfigs()) {
    ModelConfig config = base;
    config.hashing.seed = 7;
    const std::string name = OptimizerName(config);
    std::vector<std::string> digests;
    std::vector<std::vector<uint64_t>> margins;
    for (Form form : {Form::kFeatures, Form::kPacked, Form::kKeys, Form::kUnitKeys}) {
      auto model = *CreateModel(config);
      const ExampleLimits limits;
      RandomRequests random(31);
      for (int step = 0; step < 150; ++step) {
        const v1::PredictRequest r = Rewrite(random.Request(), form, model->hasher());
        auto context = ToExample(r.context(), "context", limits);
        auto example = ToExample(r.candidates(0), "candidates[0]", limits);
        ASSERT_TRUE(context.ok() && example.ok()) << context.status() << example.status();
        if (model->dense_block() == nullptr) {
          context->dense.clear();
          example->dense.clear();
        }
        const float label = step % 3 == 0 ? 1.0f : (config.loss == LossType::kHinge ? -1.0f : 0.0f);
        const TrainingExample t{&*context, &*example, label, 1.0f};
        LearnBatch(*model, {&t, 1});
      }
      digests.push_back(StateDigest(*model));
      std::vector<uint64_t> bits;
      RandomRequests probes(41);
      for (int trial = 0; trial < 50; ++trial) {
        v1::PredictRequest r = Rewrite(probes.Request(), form, model->hasher());
        r.mutable_context()->clear_dense();
        for (v1::Example& c : *r.mutable_candidates()) c.clear_dense();
        auto scores = ScoreHashed(r, *model, limits);
        ASSERT_TRUE(scores.ok()) << scores.status();
        for (const CandidateScore& s : *scores) bits.push_back(Bits(s.margin));
      }
      margins.push_back(bits);
    }
    EXPECT_EQ(digests[1], digests[0]) << name << ": packed";
    EXPECT_EQ(digests[2], digests[0]) << name << ": keys";
    EXPECT_EQ(margins[1], margins[0]) << name << ": packed";
    EXPECT_EQ(margins[2], margins[0]) << name << ": keys";
    EXPECT_EQ(digests[3], digests[0]) << name << ": unit keys";
    EXPECT_EQ(margins[3], margins[0]) << name << ": unit keys";
  }
}

}  // namespace
}  // namespace clickd
