// Fuzzes the numeric invariant (core/optim/numeric_bounds.h): from the bytes
// it derives a model config (any optimizer, per-coordinate or dense, any
// loss, hyperparameters from extreme doubles: 1e308, denormals, NaN, inf,
// negatives, the bounds themselves) and batches of updates (keys, values,
// labels, importances, dense values, extreme too). Whatever the server's own
// checks accept (ValidateModelConfig, CheckFeatureValue, CheckDenseValues,
// ValidateTrainingBatch) is learned on a real Model; then every margin, every
// float of the exported coordinates and round, and the margin of an unseen
// feature must be finite, or the target aborts.
// Factorization models too (FM and FFM, their hyperparameters extreme).
// Dense learners too: a dense block beside the sparse optimizer, or a dense
// learner for the whole model (the first runs found a NaN in dense
// metagrad's covariance update after gradients of 1e21; corpus file
// dense_metagrad_squared is that input).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/serving.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A double from a table of troublemakers, a bound, a raw bit pattern or a
// plain range.
double AnyDouble(FuzzedDataProvider& in) {
  static constexpr double kSpecial[] = {0.0,
                                        -0.0,
                                        1.0,
                                        -1.0,
                                        1e308,
                                        -1e308,
                                        1e-308,
                                        4.9e-324,
                                        2.2e-308,
                                        kInf,
                                        -kInf,
                                        kNaN,
                                        1e20,
                                        -1e20,
                                        1e30,
                                        1e38,
                                        3.4e38,
                                        1e-30,
                                        1e-45,
                                        0.5,
                                        0.9999999,
                                        kMinRate,
                                        kMaxRate,
                                        kMinScale,
                                        kMaxScale,
                                        kMaxImportance,
                                        kMaxFeatureValue,
                                        -kMaxFeatureValue,
                                        kMaxSquaredLabel,
                                        -kMaxSquaredLabel};
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return in.PickValueInArray(kSpecial);
    case 1: {
      const uint64_t bits = in.ConsumeIntegral<uint64_t>();
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      return d;
    }
    case 2:
      return in.ConsumeFloatingPointInRange<double>(-kMaxFeatureValue, kMaxFeatureValue);
    default:
      return in.ConsumeFloatingPointInRange<double>(0, 10);
  }
}

// Leaves the default or sets an arbitrary double.
void MaybeSet(FuzzedDataProvider& in, double* field) {
  if (in.ConsumeBool()) *field = AnyDouble(in);
}

ModelConfig AnyConfig(FuzzedDataProvider& in) {
  ModelConfig c;
  static constexpr const char* kOptimizers[] = {
      "ftrl",   "adagrad",   "adagrad_da",    "pc_ogd",   "global_ogd",  "sgd",
      "pa",     "cw",        "metagrad_diag", "ada_diag", "ada_diag_da", "ada_full",
      "ada_fd", "ada_fd_da", "ons",           "fd_son",   "metagrad"};
  (void)SetOptimizerName(in.PickValueInArray(kOptimizers), &c);
  c.loss = in.PickValueInArray({LossType::kLogistic, LossType::kSquared, LossType::kHinge});
  OptimizerConfig& o = c.optimizer;
  for (double* f :
       {&o.ftrl.alpha, &o.ftrl.beta, &o.ftrl.lambda1, &o.ftrl.lambda2, &o.adagrad.eta,
        &o.adagrad.delta, &o.adagrad.lambda, &o.pc_ogd.radius, &o.pc_ogd.scale,
        &o.global_ogd.radius, &o.global_ogd.scale, &o.sgd.eta, &o.pa.c, &o.cw.eta, &o.cw.a,
        &o.metagrad_diag.diameter, &o.metagrad_diag.gradient_bound, &o.ftrl.decay}) {
    MaybeSet(in, f);
  }
  o.ftrl.lambda1_times_t = in.ConsumeBool();
  // FTRL in the compact encoding too: its 32-bit codes must saturate where
  // the floats do, whatever the parameters.
  if (o.type == OptimizerType::kFtrl && in.ConsumeBool()) {
    c.memory.encoding = StateEncoding::kCompact;
  }
  // And with a TTL short enough that sweeps evict within a run: the stamps
  // sit beside the floats and must keep them finite and the model whole.
  if (o.type == OptimizerType::kFtrl && in.ConsumeBool()) {
    c.memory.ttl_rounds = in.ConsumeIntegralInRange<uint64_t>(kMinTtlRounds, 4 * kMinTtlRounds);
  }
  DenseOptimizerConfig& d = c.dense_optimizer;
  for (double* f : {&d.eta, &d.delta, &d.weight_power, &d.diameter, &d.gradient_bound}) {
    MaybeSet(in, f);
  }
  d.tau = in.ConsumeIntegralInRange<int>(1, 4);
  // Few bits: folded keys collide and merge.
  c.hashing.bits = in.ConsumeIntegralInRange<int>(0, 4);
  if (in.ConsumeBool()) c.hashing.interactions = {{"a", "b"}};
  if (in.ConsumeBool()) c.hashing.interactions.push_back({"a", "b", "b"});
  if (o.type != OptimizerType::kDense && in.ConsumeBool()) {
    c.dense_namespaces = {{"d", in.ConsumeIntegralInRange<int>(1, 3)}};
    static constexpr const char* kDense[] = {"ada_diag",    "ada_diag_da", "ada_full",
                                             "ada_full_da", "ada_fd",      "ada_fd_da",
                                             "ons",         "fd_son",      "metagrad"};
    d.type = *ParseDenseOptimizerType(in.PickValueInArray(kDense));
  }
  // Factors (docs/factorization.md) between the two namespaces, or within
  // one: extreme values, labels and importances must never make a factor
  // or its AdaGrad sum non-finite (StateIsFinite checks the factors too).
  if (in.ConsumeBool()) {
    FactorizationConfig& f = c.factorization;
    f.kind = in.ConsumeBool() ? FactorizationConfig::Kind::kFfm : FactorizationConfig::Kind::kFm;
    f.dim = in.ConsumeIntegralInRange<int>(1, 4);
    f.fields =
        in.ConsumeBool() ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"};
    for (double* p : {&f.eta, &f.l2, &f.init_scale}) MaybeSet(in, p);
    // Normalisation divides by the values' squared norm: tiny values make
    // a huge scale.
    f.normalize = in.ConsumeBool();
  }
  c.num_shards = 2;
  return c;
}

Example AnyExample(FuzzedDataProvider& in, const ModelConfig& config) {
  Example e;
  for (const char* ns : {"a", "b"}) {
    Namespace n{ns, {}};
    const int count = in.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < count; ++i) {
      const float value = in.ConsumeBool() ? 1.0f : static_cast<float>(AnyDouble(in));
      n.features.push_back(Feature::WithId(in.ConsumeIntegralInRange<uint64_t>(0, 5), value));
    }
    e.namespaces.push_back(std::move(n));
  }
  for (const DenseNamespace& ns : config.dense_namespaces) {
    if (!in.ConsumeBool()) continue;
    DenseValues values{ns.name, {}};
    for (int j = 0; j < ns.dim; ++j) values.values.push_back(static_cast<float>(AnyDouble(in)));
    e.dense.push_back(std::move(values));
  }
  return e;
}

// The server's checks of one example's values (wire/example_proto.cc ToExample
// calls CheckFeatureValue for each feature).
bool ValuesAccepted(const Model& model, const Example& e) {
  for (const Namespace& ns : e.namespaces) {
    for (const Feature& f : ns.features) {
      if (!CheckFeatureValue(f.value, "value").ok()) return false;
    }
  }
  return CheckDenseValues(model, nullptr, "", e, "example").ok();
}

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckModel(const Model& model) {
  const Model::State state = model.ExportState();
  if (model.config().memory.encoding == StateEncoding::kFloat) {
    Require(StateIsFinite(state));
  } else {
    // Compact codes are not floats: every coordinate's weight must be.
    std::vector<HashedFeature> keys;
    const size_t record = sizeof(uint64_t) + state.state_size;
    for (size_t at = 0; at + record <= state.coordinates.size(); at += record) {
      uint64_t key;
      std::memcpy(&key, state.coordinates.data() + at, sizeof(key));
      keys.push_back({key, 1.0f});
    }
    std::vector<double> weights(keys.size());
    model.Weights(keys, absl::MakeSpan(weights));
    for (double w : weights) Require(std::isfinite(w));
  }
  Example unseen;
  unseen.namespaces.push_back({"z", {Feature::Named("never seen")}});
  Require(std::isfinite(model.Predict(unseen)));
}

}  // namespace
}  // namespace clickd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clickd;
  FuzzedDataProvider in(data, size);
  const ModelConfig config = AnyConfig(in);
  if (!ValidateModelConfig(config).ok()) return 0;
  auto created = CreateModel(config);
  Require(created.ok());
  Model& model = **created;
  const int batches = in.ConsumeIntegralInRange<int>(1, 8);
  for (int b = 0; b < batches && in.remaining_bytes() > 0; ++b) {
    std::vector<Example> examples(in.ConsumeIntegralInRange<int>(1, 6));
    std::vector<TrainingExample> batch;
    bool accepted = true;
    for (Example& e : examples) {
      e = AnyExample(in, config);
      accepted &= ValuesAccepted(model, e);
      const float label = in.ConsumeBool()
                              ? static_cast<float>(in.ConsumeIntegralInRange<int>(-1, 1))
                              : static_cast<float>(AnyDouble(in));
      const float importance = in.ConsumeBool() ? 1.0f : static_cast<float>(AnyDouble(in));
      batch.push_back({nullptr, &e, label, importance});
    }
    accepted &= ValidateTrainingBatch(config.loss, batch, [](size_t) { return "e"; }).ok();
    if (!accepted) continue;  // the server refuses the whole request
    // Repeat the batch: accumulators must saturate, not overflow.
    const int repeats = in.ConsumeIntegralInRange<int>(1, 50);
    for (int r = 0; r < repeats; ++r) {
      for (const ScoredExample& s : LearnBatch(model, batch)) Require(std::isfinite(s.margin));
    }
    for (const Example& e : examples) {
      Require(std::isfinite(ScoreCandidates(model, Example{}, {&e, 1})[0].margin));
    }
  }
  CheckModel(model);
  return 0;
}
