#include "wire/example_proto.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

// `status` with `path` in front of its message.
absl::Status AtPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), absl::StrCat(path, status.message()));
}

// Checks a name's length (a Feature's or a packed one); the error is
// relative to the name.
absl::Status CheckName(const std::string& name, const ExampleLimits& limits) {
  if (!name.empty() && name.size() <= limits.max_name_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(" has ", name.size(), " bytes; must be 1..", limits.max_name_bytes));
}

// Checks one feature. Its errors name what is wrong relative to the
// feature (" has neither name nor id", ".value is nan; ..."): the caller,
// which knows where the feature is, puts its path in front (AtPath).
absl::Status CheckFeature(const v1::Feature& proto, const ExampleLimits& limits, float* value) {
  switch (proto.key_case()) {
    case v1::Feature::kName:
      if (proto.name().empty() || proto.name().size() > limits.max_name_bytes) {
        return AtPath(CheckName(proto.name(), limits), ".name");
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

// Checks a packed value list against the keys it values: empty (every
// value 1) or exactly one value per key. The error names the list, e.g.
// ".values: 5 values for 4 names".
absl::Status CheckPackedLength(int values, int keys, const char* values_field,
                               const char* keys_field) {
  if (values == 0 || values == keys) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(".", values_field, ": ", values, " values for ", keys, " ", keys_field));
}

// The value of packed entry `i` (1 when the list is empty), checked; the
// error is relative to the namespace (".values[2] is nan; ...").
absl::Status PackedValue(const google::protobuf::RepeatedField<float>& values, int i,
                         const char* values_field, float* value) {
  *value = values.empty() ? 1.0f : values.Get(i);
  if (std::isfinite(*value) && std::abs(static_cast<double>(*value)) <= kMaxFeatureValue) {
    return absl::OkStatus();
  }
  return CheckFeatureValue(*value, absl::StrCat(".", values_field, "[", i, "]"));
}

// Checks and hands on the packed features of one namespace: names, then
// ids, then keys. Errors are relative to the namespace.
absl::Status CheckPacked(const v1::Namespace& ns, const ExampleLimits& limits, ExampleSink* sink) {
  float value = 0;
  if (ns.names_size() > 0 || ns.values_size() > 0) {
    absl::Status s = CheckPackedLength(ns.values_size(), ns.names_size(), "values", "names");
    if (!s.ok()) return s;
    for (int i = 0; i < ns.names_size(); ++i) {
      if (s = CheckName(ns.names(i), limits); !s.ok()) {
        return AtPath(s, absl::StrCat(".names[", i, "]"));
      }
      if (s = PackedValue(ns.values(), i, "values", &value); !s.ok()) return s;
      sink->AddNamed(ns.names(i), value);
    }
  }
  if (ns.ids_size() > 0 || ns.id_values_size() > 0) {
    absl::Status s = CheckPackedLength(ns.id_values_size(), ns.ids_size(), "id_values", "ids");
    if (!s.ok()) return s;
    for (int i = 0; i < ns.ids_size(); ++i) {
      if (s = PackedValue(ns.id_values(), i, "id_values", &value); !s.ok()) return s;
      sink->AddId(ns.ids(i), value);
    }
  }
  if (ns.keys_size() > 0 || ns.key_values_size() > 0) {
    absl::Status s = CheckPackedLength(ns.key_values_size(), ns.keys_size(), "key_values", "keys");
    if (!s.ok()) return s;
    for (int i = 0; i < ns.keys_size(); ++i) {
      if (s = PackedValue(ns.key_values(), i, "key_values", &value); !s.ok()) return s;
      sink->AddKey(ns.keys(i), value);
    }
  }
  return absl::OkStatus();
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
  for (const v1::Namespace& ns : proto.namespaces()) features += FeatureEntries(ns);
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
    target.features.reserve(FeatureEntries(ns));
  }

  void AddNamed(const std::string& name, float value) override {
    out_->namespaces.back().features.push_back(Feature::Named(name, value));
  }
  void AddId(uint64_t id, float value) override {
    out_->namespaces.back().features.push_back(Feature::WithId(id, value));
  }
  void AddKey(uint64_t key, float value) override {
    out_->namespaces.back().features.push_back(Feature::WithKey(key, value));
  }

 private:
  Example* const out_;
};

}  // namespace

size_t FeatureEntries(const v1::Namespace& ns) {
  return ns.features_size() + std::max(ns.names_size(), ns.values_size()) +
         std::max(ns.ids_size(), ns.id_values_size()) +
         std::max(ns.keys_size(), ns.key_values_size());
}

uint64_t NonzeroFeatures(const v1::Namespace& ns) {
  uint64_t nonzero = 0;
  for (const v1::Feature& f : ns.features()) nonzero += !(f.has_value() && f.value() == 0.0f);
  auto packed = [&nonzero](int keys, const google::protobuf::RepeatedField<float>& values) {
    for (float v : values) nonzero += v != 0.0f;
    if (keys > values.size()) nonzero += keys - values.size();
  };
  packed(ns.names_size(), ns.values());
  packed(ns.ids_size(), ns.id_values());
  packed(ns.keys_size(), ns.key_values());
  return nonzero;
}

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
      const v1::Feature& feature = ns.features(f);
      float value = 0;
      if (absl::Status s = CheckFeature(feature, limits, &value); !s.ok()) {
        return AtPath(s, absl::StrCat(field(), ".namespaces[", n, "].features[", f, "]"));
      }
      if (feature.key_case() == v1::Feature::kName) {
        sink->AddNamed(feature.name(), value);
      } else {
        sink->AddId(feature.id(), value);
      }
    }
    if (absl::Status s = CheckPacked(ns, limits, sink); !s.ok()) {
      return AtPath(s, absl::StrCat(field(), ".namespaces[", n, "]"));
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
