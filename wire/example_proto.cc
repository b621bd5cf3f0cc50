#include "wire/example_proto.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

// Checks one feature. Its errors name what is wrong relative to the
// feature (" has neither name nor id", ".value is nan; ..."): the caller,
// which knows where the feature is, puts its path in front (AtPath).
absl::Status CheckFeature(const v1::Feature& proto, const ExampleLimits& limits, float* value) {
  switch (proto.key_case()) {
    case v1::Feature::kName:
      if (proto.name().empty() || proto.name().size() > limits.max_name_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            ".name has ", proto.name().size(), " bytes; must be 1..", limits.max_name_bytes));
      }
      break;
    case v1::Feature::kId:
      break;
    case v1::Feature::KEY_NOT_SET:
      return absl::InvalidArgumentError(" has neither name nor id");
  }
  *value = proto.has_value() ? proto.value() : 1.0f;
  // CheckFeatureValue's own test first, so that a valid value builds no
  // field name.
  if (std::isfinite(*value) && std::abs(static_cast<double>(*value)) <= kMaxFeatureValue) {
    return absl::OkStatus();
  }
  return CheckFeatureValue(*value, ".value");
}

// `status` with `path` in front of its message.
absl::Status AtPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), absl::StrCat(path, status.message()));
}

// Checks the example's sizes (namespaces, features) before anything is
// copied.
absl::Status CheckSizes(const v1::Example& proto, FieldPath field, const ExampleLimits& limits) {
  if (static_cast<size_t>(proto.namespaces_size()) > limits.max_namespaces_per_example) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field(), ".namespaces has ", proto.namespaces_size(),
                     " entries; the limit is ", limits.max_namespaces_per_example));
  }
  size_t features = 0;
  for (const v1::Namespace& ns : proto.namespaces()) features += ns.features_size();
  if (features > limits.max_features_per_example) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field(), " has ", features, " features; the limit is ", limits.max_features_per_example));
  }
  return absl::OkStatus();
}

// Dense values: bounded here (their total, names' length); checked against
// the model's dense namespaces by CheckDenseValues.
absl::Status ConvertDense(const v1::Example& proto, FieldPath field, const ExampleLimits& limits,
                          Example* out) {
  size_t dense_values = 0;
  for (const v1::DenseValues& d : proto.dense()) dense_values += d.values_size();
  if (dense_values > static_cast<size_t>(kMaxDenseDim)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field(), " has ", dense_values, " dense values; the limit is ", kMaxDenseDim));
  }
  out->dense.resize(proto.dense_size());
  for (int d = 0; d < proto.dense_size(); ++d) {
    const v1::DenseValues& dense = proto.dense(d);
    if (dense.namespace_().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(), ".dense[", d, "].namespace has ", dense.namespace_().size(),
                       " bytes; the limit is ", limits.max_name_bytes));
    }
    out->dense[d].name = dense.namespace_();
    out->dense[d].values.assign(dense.values().begin(), dense.values().end());
  }
  return absl::OkStatus();
}

// Builds the Example the checked parts come from.
class ExampleBuilder final : public ExampleSink {
 public:
  explicit ExampleBuilder(Example* out) : out_(out) {}

  void StartNamespace(const v1::Namespace& ns) override {
    Namespace& target = out_->namespaces.emplace_back();
    target.name = ns.name();
    target.features.reserve(ns.features_size());
  }

  void AddFeature(const v1::Feature& proto, float value) override {
    Feature& feature = out_->namespaces.back().features.emplace_back();
    feature.has_id = proto.key_case() == v1::Feature::kId;
    if (feature.has_id) {
      feature.id = proto.id();
    } else {
      feature.name = proto.name();
    }
    feature.value = value;
  }

 private:
  Example* const out_;
};

}  // namespace

absl::Status CheckExample(const v1::Example& proto, FieldPath field, const ExampleLimits& limits,
                          ExampleSink* sink, Example* dense) {
  if (absl::Status s = CheckSizes(proto, field, limits); !s.ok()) return s;
  for (int n = 0; n < proto.namespaces_size(); ++n) {
    const v1::Namespace& ns = proto.namespaces(n);
    if (ns.name().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(field(), ".namespaces[", n, "].name has ",
                                                     ns.name().size(), " bytes; the limit is ",
                                                     limits.max_name_bytes));
    }
    sink->StartNamespace(ns);
    for (int f = 0; f < ns.features_size(); ++f) {
      float value = 0;
      if (absl::Status s = CheckFeature(ns.features(f), limits, &value); !s.ok()) {
        return AtPath(s, absl::StrCat(field(), ".namespaces[", n, "].features[", f, "]"));
      }
      sink->AddFeature(ns.features(f), value);
    }
  }
  if (proto.dense_size() == 0) return absl::OkStatus();
  return ConvertDense(proto, field, limits, dense);
}

absl::StatusOr<Example> ToExample(const v1::Example& proto, FieldPath field,
                                  const ExampleLimits& limits) {
  Example out;
  out.namespaces.reserve(proto.namespaces_size());
  ExampleBuilder builder(&out);
  if (absl::Status s = CheckExample(proto, field, limits, &builder, &out); !s.ok()) return s;
  return out;
}

absl::StatusOr<Example> ToExample(const v1::Example& proto, std::string_view field,
                                  const ExampleLimits& limits) {
  return ToExample(
      proto, [field] { return std::string(field); }, limits);
}

}  // namespace clickd
