#include "server/request_cost.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/features/feature_count.h"
#include "core/optim/compact_ftrl.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/store/compact_table.h"
#include "wire/example_proto.h"

namespace clickd {

namespace {

bool IsFrequentDirections(DenseOptimizerType type) {
  return type == DenseOptimizerType::kAdaFd || type == DenseOptimizerType::kAdaFdDa ||
         type == DenseOptimizerType::kFdSon;
}

}  // namespace

absl::Status CheckModelFixedBytes(const ModelConfig& config, const Limits& limits) {
  const uint64_t stores = 1 + config.variants.size();
  const uint64_t limit = limits.max_model_fixed_bytes;
  const auto refuse = [&](const std::string& field, uint64_t value, uint64_t bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.", field, " is ", value, ": the model would commit ", bytes,
        " bytes at creation (its ", stores,
        " store(s): the primary and each variant); the limit on a model's fixed memory is "
        "--max_model_fixed_bytes ",
        limit));
  };
  // Two generations of one-byte counters per Bloom filter: the model's,
  // and each variant's own (core/store/feature_admission.h).
  uint64_t bytes = 0;
  const auto add_filter = [&](const AdmissionOptions& admission) {
    if (admission.policy == AdmissionOptions::Policy::kBloom) bytes += 2 * admission.counters;
  };
  add_filter(config.admission);
  if (bytes > limit) return refuse("admission.counters", config.admission.counters, bytes);
  for (size_t i = 0; i < config.variants.size(); ++i) {
    add_filter(config.variants[i].admission);
    if (bytes > limit) {
      return refuse(absl::StrCat("variants[", i, "].admission.counters"),
                    config.variants[i].admission.counters, bytes);
    }
  }
  // The dense learner's matrices, allocated at creation at its dimension d
  // (2^bits for a dense model, plus the dense namespaces' dims): doubles,
  // as the learners' StateBytes count them.
  const bool dense_model = config.optimizer.type == OptimizerType::kDense;
  uint64_t d = dense_model ? uint64_t{1} << std::clamp(config.hashing.bits, 0, 62) : 0;
  for (const DenseNamespace& ns : config.dense_namespaces) d += static_cast<uint64_t>(ns.dim);
  if (d > 0) {
    const DenseOptimizerConfig& dense = config.dense_optimizer;
    const uint64_t tau = static_cast<uint64_t>(std::max(1, dense.tau));
    uint64_t doubles = 2 * d;  // the weights and a gradient sum
    switch (dense.type) {
      case DenseOptimizerType::kAdaFd:
      case DenseOptimizerType::kAdaFdDa:
      case DenseOptimizerType::kFdSon:
        // The sketch and its right singular vectors (tau x d each), its
        // Gram matrix and two work copies (tau x tau each).
        doubles += 2 * tau * d + 3 * tau * tau + tau;
        break;
      case DenseOptimizerType::kAdaFull:
      case DenseOptimizerType::kAdaFullDa:
        doubles += 2 * d * d;  // the sum of outer products and its root
        break;
      case DenseOptimizerType::kOns:
        doubles += d * d;  // the inverse Hessian estimate
        break;
      default:
        break;  // diagonal learners: vectors only; metagrad is bounded by its dim cap
    }
    bytes += stores * doubles * sizeof(double);
    if (bytes > limit) {
      if (IsFrequentDirections(dense.type)) {
        return refuse("dense_optimizer.tau", tau, bytes);
      }
      return refuse(dense_model ? "hashing.bits" : "dense_namespaces (total dim)",
                    dense_model ? static_cast<uint64_t>(config.hashing.bits) : d, bytes);
    }
  }
  if (config.memory.encoding == StateEncoding::kCompact) {
    const uint64_t shards = static_cast<uint64_t>(std::max(1, config.num_shards));
    bytes += stores * shards * CompactTable<CompactFtrl::State>::FixedBytes(config.num_shards);
    if (bytes > limit) return refuse("num_shards", shards, bytes);
  }
  return absl::OkStatus();
}
namespace {

// The namespace sizes of an example proto: its non-zero features in every
// wire form (an unset value is 1), as hashing will see them once converted
// (wire/example_proto.h NonzeroFeatures).
// Inline for a typical example's few namespaces: a Predict counts each of
// its candidates this way, so a heap vector would be a malloc per candidate.
using ExampleSizes = absl::InlinedVector<NamespaceSize, 8>;

ExampleSizes Sizes(const v1::Example& example) {
  ExampleSizes sizes;
  sizes.reserve(example.namespaces_size());
  for (const v1::Namespace& ns : example.namespaces()) {
    sizes.push_back({ns.name(), NonzeroFeatures(ns)});
  }
  return sizes;
}

// The example's own features, its namespaces' sizes summed: with no
// crosses, all that CountHashedFeatures needs of it, without building the
// sizes by name (a saturating sum of counts is the same in any order).
uint64_t OwnFeatures(const v1::Example& example) {
  uint64_t n = 0;
  for (const v1::Namespace& ns : example.namespaces()) n = SaturatingAdd(n, NonzeroFeatures(ns));
  return n;
}

uint64_t DenseValueCount(const v1::Example& example) {
  uint64_t n = 0;
  for (const v1::DenseValues& d : example.dense()) n = SaturatingAdd(n, d.values_size());
  return n;
}

absl::Status TooManyForExample(const std::string& field, uint64_t count, const Limits& limits) {
  return absl::ResourceExhaustedError(
      absl::StrCat(field, " yields ", count, " features after interactions; the limit is ",
                   limits.max_features_after_interactions, " (max_features_after_interactions)"));
}

absl::Status TooManyForRequest(uint64_t count, const Limits& limits) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the request's examples yield ", count,
                   " features after interactions in total; the limit is ",
                   limits.max_features_per_request, " (max_features_per_request)"));
}

// One example's features after interactions, with `context` (its sizes
// and dense values), dense values included.
uint64_t ExampleCost(const HashingConfig& hashing, absl::Span<const NamespaceSize> context,
                     uint64_t context_dense, const v1::Example& example) {
  const uint64_t dense = SaturatingAdd(context_dense, DenseValueCount(example));
  if (hashing.interactions.empty()) {
    return SaturatingAdd(CountHashedFeatures(hashing, context, {}),
                         SaturatingAdd(dense, OwnFeatures(example)));
  }
  return SaturatingAdd(CountHashedFeatures(hashing, context, Sizes(example)), dense);
}

// Adds one (context, example) pair's cost to *total, checking the example;
// `field`, its path, is formatted only for an error.
absl::Status AddExample(const HashingConfig& hashing, absl::Span<const NamespaceSize> context,
                        uint64_t context_dense, const v1::Example& example, FieldPath field,
                        const Limits& limits, uint64_t* total) {
  const uint64_t count = ExampleCost(hashing, context, context_dense, example);
  if (count > limits.max_features_after_interactions) {
    return TooManyForExample(field(), count, limits);
  }
  *total = SaturatingAdd(*total, count);
  return absl::OkStatus();
}

// A Predict's costs: the context's, hashed once, and each candidate's with
// the context (checked whole against the per-example limit); the request's
// total is the context's plus each candidate's own and crossed features.
class PredictCosts {
 public:
  PredictCosts(const HashingConfig& hashing, const v1::PredictRequest& request)
      : hashing_(hashing),
        context_(Sizes(request.context())),
        context_dense_(DenseValueCount(request.context())),
        context_cost_(SaturatingAdd(CountHashedFeatures(hashing, context_, {}), context_dense_)) {}

  uint64_t context() const { return context_cost_; }
  uint64_t WithContext(const v1::Example& candidate) const {
    if (hashing_.interactions.empty()) {
      return SaturatingAdd(context_cost_,
                           SaturatingAdd(OwnFeatures(candidate), DenseValueCount(candidate)));
    }
    return ExampleCost(hashing_, context_, context_dense_, candidate);
  }

 private:
  const HashingConfig& hashing_;
  const ExampleSizes context_;
  const uint64_t context_dense_;
  const uint64_t context_cost_;
};

}  // namespace

bool PredictCostCheck::Refuse(int index, uint64_t with_context) {
  if (with_context > limits_.max_features_after_interactions) {
    cost_.status = TooManyForExample(absl::StrCat("candidates[", index, "] (with the context)"),
                                     with_context, limits_);
    return false;
  }
  cost_.features = SaturatingAdd(cost_.features, with_context - context_cost_);
  cost_.status = TooManyForRequest(cost_.features, limits_);
  return false;
}

RequestCost CountPredictCost(const HashingConfig& hashing, const v1::PredictRequest& request,
                             const Limits& limits) {
  const PredictCosts costs(hashing, request);
  PredictCostCheck check(costs.context(), limits);
  for (int i = 0; i < request.candidates_size(); ++i) {
    if (!check.Add(i, costs.WithContext(request.candidates(i)))) break;
  }
  return check.cost();
}

RequestCost CountUpdateCost(const HashingConfig& hashing, const v1::UpdateRequest& request,
                            const Limits& limits) {
  RequestCost cost;
  const auto add = [&](absl::Span<const NamespaceSize> context, uint64_t context_dense,
                       const v1::Example& example, FieldPath field) {
    cost.status =
        AddExample(hashing, context, context_dense, example, field, limits, &cost.features);
    if (cost.status.ok() && cost.features > limits.max_features_per_request) {
      cost.status = TooManyForRequest(cost.features, limits);
    }
    return cost.status.ok();
  };
  for (int i = 0; i < request.examples_size(); ++i) {
    if (!add({}, 0, request.examples(i).example(),
             [i] { return absl::StrCat("examples[", i, "].example"); })) {
      return cost;
    }
  }
  for (int m = 0; m < request.impressions_size(); ++m) {
    const v1::Impression& imp = request.impressions(m);
    const ExampleSizes context = Sizes(imp.context());
    const uint64_t context_dense = DenseValueCount(imp.context());
    for (int c = 0; c < imp.candidates_size(); ++c) {
      if (!add(context, context_dense, imp.candidates(c).example(), [m, c] {
            return absl::StrCat("impressions[", m, "].candidates[", c, "].example");
          })) {
        return cost;
      }
    }
  }
  return cost;
}

}  // namespace clickd
