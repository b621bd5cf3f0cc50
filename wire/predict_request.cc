#include "wire/predict_request.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

// Where an example sits in the request, spelled only for an error message:
// "context" or "candidates[i]".
struct ExamplePath {
  int candidate;  // -1 for the context

  std::string Field() const {
    return candidate < 0 ? std::string("context") : absl::StrCat("candidates[", candidate, "]");
  }
};

std::string FeatureField(ExamplePath path, int n, int f) {
  return absl::StrCat(path.Field(), ".namespaces[", n, "].features[", f, "]");
}

// The checks of ConvertFeature, then the feature goes to the collector.
absl::Status AddFeature(const v1::Feature& feature, ExamplePath path, int n, int f,
                        const ExampleLimits& limits, FeatureHasher::Collector* collector) {
  switch (feature.key_case()) {
    case v1::Feature::kName:
      if (feature.name().empty() || feature.name().size() > limits.max_name_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(FeatureField(path, n, f), ".name has ",
                                                       feature.name().size(), " bytes; must be 1..",
                                                       limits.max_name_bytes));
      }
      break;
    case v1::Feature::kId:
      break;
    case v1::Feature::KEY_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat(FeatureField(path, n, f), " has neither name nor id"));
  }
  const float value = feature.has_value() ? feature.value() : 1.0f;
  // CheckFeatureValue's test, so that its message is built only on failure.
  if (!std::isfinite(value) || std::abs(static_cast<double>(value)) > kMaxFeatureValue) {
    absl::Status s = CheckFeatureValue(value, FeatureField(path, n, f) + ".value");
    if (!s.ok()) return s;
  }
  if (feature.key_case() == v1::Feature::kName) {
    collector->AddNamed(feature.name(), value);
  } else {
    collector->AddId(feature.id(), value);
  }
  return absl::OkStatus();
}

// ToExample's checks of one example, in its order; the features go to the
// collector and the dense values, if any, to *dense.
absl::Status AddExample(const v1::Example& proto, ExamplePath path, const ExampleLimits& limits,
                        FeatureHasher::Collector* collector, Example* dense) {
  if (static_cast<size_t>(proto.namespaces_size()) > limits.max_namespaces_per_example) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path.Field(), ".namespaces has ", proto.namespaces_size(),
                     " entries; the limit is ", limits.max_namespaces_per_example));
  }
  size_t features = 0;
  for (const v1::Namespace& ns : proto.namespaces()) features += ns.features_size();
  if (features > limits.max_features_per_example) {
    return absl::ResourceExhaustedError(absl::StrCat(path.Field(), " has ", features,
                                                     " features; the limit is ",
                                                     limits.max_features_per_example));
  }
  for (int n = 0; n < proto.namespaces_size(); ++n) {
    const v1::Namespace& ns = proto.namespaces(n);
    if (ns.name().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(path.Field(), ".namespaces[", n, "].name has ",
                                                     ns.name().size(), " bytes; the limit is ",
                                                     limits.max_name_bytes));
    }
    collector->StartNamespace(ns.name());
    for (int f = 0; f < ns.features_size(); ++f) {
      absl::Status s = AddFeature(ns.features(f), path, n, f, limits, collector);
      if (!s.ok()) return s;
    }
  }
  if (proto.dense_size() == 0) return absl::OkStatus();
  size_t dense_values = 0;
  for (const v1::DenseValues& d : proto.dense()) dense_values += d.values_size();
  if (dense_values > static_cast<size_t>(kMaxDenseDim)) {
    return absl::ResourceExhaustedError(absl::StrCat(path.Field(), " has ", dense_values,
                                                     " dense values; the limit is ", kMaxDenseDim));
  }
  dense->dense.resize(proto.dense_size());
  for (int d = 0; d < proto.dense_size(); ++d) {
    const v1::DenseValues& values = proto.dense(d);
    if (values.namespace_().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path.Field(), ".dense[", d, "].namespace has ", values.namespace_().size(),
                       " bytes; the limit is ", limits.max_name_bytes));
    }
    dense->dense[d].name = values.namespace_();
    dense->dense[d].values.assign(values.values().begin(), values.values().end());
  }
  return absl::OkStatus();
}

bool HasDense(const v1::PredictRequest& request) {
  if (request.context().dense_size() > 0) return true;
  for (const v1::Example& c : request.candidates()) {
    if (c.dense_size() > 0) return true;
  }
  return false;
}

}  // namespace

absl::Status HashPredictRequest(const v1::PredictRequest& request, const Model& model,
                                const ExampleLimits& limits, HashedCandidates* out) {
  out->Clear();
  const FeatureHasher& hasher = model.hasher();
  const int n = request.candidates_size();
  if (HasDense(request)) out->dense.resize(n + 1);
  Example no_dense;  // where dense values go when the request has none
  auto dense_of = [&](int k) { return out->dense.empty() ? &no_dense : &out->dense[k]; };
  {
    FeatureHasher::Collector collector(hasher, &out->context.features, &out->context.terms);
    absl::Status s = AddExample(request.context(), {-1}, limits, &collector, dense_of(0));
    if (!s.ok()) return s;
  }
  hasher.FinishContext(&out->context);
  thread_local FeatureHasher::TermLists terms;
  out->ends.reserve(n);
  for (int i = 0; i < n; ++i) {
    const size_t first = out->features.size();
    FeatureHasher::Collector collector(hasher, &out->features, &terms);
    absl::Status s = AddExample(request.candidates(i), {i}, limits, &collector, dense_of(1 + i));
    if (!s.ok()) return s;
    hasher.FinishCandidate(out->context, terms, &out->features, first);
    out->ends.push_back(out->features.size());
  }
  if (out->dense.empty()) return absl::OkStatus();  // CheckDenseValues passes every candidate
  for (int i = 0; i < n; ++i) {
    absl::Status s = CheckDenseValues(model, &out->dense[0], "context", out->dense[1 + i],
                                      absl::StrCat("candidates[", i, "]"));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace clickd
