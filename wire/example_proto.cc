#include "wire/example_proto.h"

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

absl::Status TooMany(const std::string& field, size_t count, size_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat(field, " has ", count, " entries; the limit is ", limit));
}

absl::Status ConvertFeature(const v1::Feature& proto, const std::string& field,
                            const ExampleLimits& limits, Feature* out) {
  switch (proto.key_case()) {
    case v1::Feature::kName:
      if (proto.name().empty() || proto.name().size() > limits.max_name_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".name has ", proto.name().size(),
                                                       " bytes; must be 1..",
                                                       limits.max_name_bytes));
      }
      out->name = proto.name();
      out->has_id = false;
      break;
    case v1::Feature::kId:
      out->id = proto.id();
      out->has_id = true;
      break;
    case v1::Feature::KEY_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(field, " has neither name nor id"));
  }
  out->value = proto.has_value() ? proto.value() : 1.0f;
  return CheckFeatureValue(out->value, field + ".value");
}

}  // namespace

absl::StatusOr<Example> ToExample(const v1::Example& proto, const std::string& field,
                                  const ExampleLimits& limits) {
  if (static_cast<size_t>(proto.namespaces_size()) > limits.max_namespaces_per_example) {
    return TooMany(field + ".namespaces", proto.namespaces_size(),
                   limits.max_namespaces_per_example);
  }
  size_t features = 0;
  for (const v1::Namespace& ns : proto.namespaces()) features += ns.features_size();
  if (features > limits.max_features_per_example) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, " has ", features, " features; the limit is ", limits.max_features_per_example));
  }
  Example out;
  out.namespaces.resize(proto.namespaces_size());
  for (int n = 0; n < proto.namespaces_size(); ++n) {
    const v1::Namespace& ns = proto.namespaces(n);
    const std::string ns_field = absl::StrCat(field, ".namespaces[", n, "]");
    if (ns.name().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(ns_field, ".name has ", ns.name().size(),
                                                     " bytes; the limit is ",
                                                     limits.max_name_bytes));
    }
    Namespace& target = out.namespaces[n];
    target.name = ns.name();
    target.features.resize(ns.features_size());
    for (int f = 0; f < ns.features_size(); ++f) {
      absl::Status s = ConvertFeature(ns.features(f), absl::StrCat(ns_field, ".features[", f, "]"),
                                      limits, &target.features[f]);
      if (!s.ok()) return s;
    }
  }
  // Dense values: bounded here (their total, names' length); checked
  // against the model's dense namespaces by CheckDenseValues.
  size_t dense_values = 0;
  for (const v1::DenseValues& d : proto.dense()) dense_values += d.values_size();
  if (dense_values > static_cast<size_t>(kMaxDenseDim)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, " has ", dense_values, " dense values; the limit is ", kMaxDenseDim));
  }
  out.dense.resize(proto.dense_size());
  for (int d = 0; d < proto.dense_size(); ++d) {
    const v1::DenseValues& dense = proto.dense(d);
    if (dense.namespace_().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dense[", d, "].namespace has ", dense.namespace_().size(),
                       " bytes; the limit is ", limits.max_name_bytes));
    }
    out.dense[d].name = dense.namespace_();
    out.dense[d].values.assign(dense.values().begin(), dense.values().end());
  }
  return out;
}

}  // namespace clickd
