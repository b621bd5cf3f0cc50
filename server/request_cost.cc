#include "server/request_cost.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/features/feature_count.h"
#include "wire/example_proto.h"

namespace clickd {
namespace {

// The namespace sizes of an example proto: its non-zero features in every
// wire form (an unset value is 1), as hashing will see them once converted
// (wire/example_proto.h NonzeroFeatures).
std::vector<NamespaceSize> Sizes(const v1::Example& example) {
  std::vector<NamespaceSize> sizes;
  sizes.reserve(example.namespaces_size());
  for (const v1::Namespace& ns : example.namespaces()) {
    sizes.push_back({ns.name(), NonzeroFeatures(ns)});
  }
  return sizes;
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

// Adds one (context, example) pair's cost to *total, checking the example;
// `field`, its path, is formatted only for an error.
absl::Status AddExample(const HashingConfig& hashing, const std::vector<NamespaceSize>& context,
                        uint64_t context_dense, const v1::Example& example, FieldPath field,
                        const Limits& limits, uint64_t* total) {
  const uint64_t count = SaturatingAdd(CountHashedFeatures(hashing, context, Sizes(example)),
                                       SaturatingAdd(context_dense, DenseValueCount(example)));
  if (count > limits.max_features_after_interactions) {
    return TooManyForExample(field(), count, limits);
  }
  *total = SaturatingAdd(*total, count);
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPredictCost(const HashingConfig& hashing, const v1::PredictRequest& request,
                              const Limits& limits) {
  const std::vector<NamespaceSize> context = Sizes(request.context());
  const uint64_t context_dense = DenseValueCount(request.context());
  // The context is hashed once; each candidate adds its own features and
  // the crosses it takes part in (and is checked whole, with the context).
  const uint64_t context_cost =
      SaturatingAdd(CountHashedFeatures(hashing, context, {}), context_dense);
  uint64_t total = context_cost;
  for (int i = 0; i < request.candidates_size(); ++i) {
    uint64_t with_context = 0;
    absl::Status s = AddExample(
        hashing, context, context_dense, request.candidates(i),
        [i] { return absl::StrCat("candidates[", i, "] (with the context)"); }, limits,
        &with_context);
    if (!s.ok()) return s;
    total = SaturatingAdd(total, with_context - context_cost);
    if (total > limits.max_features_per_request) return TooManyForRequest(total, limits);
  }
  return absl::OkStatus();
}

absl::Status CheckUpdateCost(const HashingConfig& hashing, const v1::UpdateRequest& request,
                             const Limits& limits) {
  uint64_t total = 0;
  for (int i = 0; i < request.examples_size(); ++i) {
    absl::Status s = AddExample(
        hashing, {}, 0, request.examples(i).example(),
        [i] { return absl::StrCat("examples[", i, "].example"); }, limits, &total);
    if (!s.ok()) return s;
    if (total > limits.max_features_per_request) return TooManyForRequest(total, limits);
  }
  for (int m = 0; m < request.impressions_size(); ++m) {
    const v1::Impression& imp = request.impressions(m);
    const std::vector<NamespaceSize> context = Sizes(imp.context());
    const uint64_t context_dense = DenseValueCount(imp.context());
    for (int c = 0; c < imp.candidates_size(); ++c) {
      absl::Status s = AddExample(
          hashing, context, context_dense, imp.candidates(c).example(),
          [m, c] { return absl::StrCat("impressions[", m, "].candidates[", c, "].example"); },
          limits, &total);
      if (!s.ok()) return s;
      if (total > limits.max_features_per_request) return TooManyForRequest(total, limits);
    }
  }
  return absl::OkStatus();
}

}  // namespace clickd
