#include "wire/example_proto.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

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

// Whether CheckFeatureValue passes `value`, tested without building the
// field name it would need for an error.
bool ValueInBounds(float value) {
  return std::isfinite(value) && std::abs(static_cast<double>(value)) <= kMaxFeatureValue;
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
  if (ValueInBounds(*value)) return absl::OkStatus();
  return CheckFeatureValue(*value, ".value");
}

// Checks one packed list, `keys` (names, ids or keys) with its `values`
// (empty: every value 1; else one per key), and hands each entry to
// add(key, value). The valid path builds no Status: this loop runs once per
// feature. Errors are relative to the namespace: ".values: 5 values for 4
// names", ".names[2] has 0 bytes; ...", ".values[2] is nan; ...".
template <typename Keys, typename Add>
absl::Status CheckPackedList(const Keys& keys, const google::protobuf::RepeatedField<float>& values,
                             const char* keys_field, const char* values_field,
                             const ExampleLimits& limits, Add add) {
  constexpr bool kNames = std::is_same_v<Keys, google::protobuf::RepeatedPtrField<std::string>>;
  const int n = keys.size();
  if (!values.empty() && values.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(".", values_field, ": ", values.size(), " values for ", n, " ", keys_field));
  }
  const bool ones = values.empty();
  for (int i = 0; i < n; ++i) {
    const auto& key = keys.Get(i);
    const float value = ones ? 1.0f : values.Get(i);
    if constexpr (kNames) {
      if (key.empty() || key.size() > limits.max_name_bytes) {
        return AtPath(CheckName(key, limits), absl::StrCat(".", keys_field, "[", i, "]"));
      }
    }
    if (!ValueInBounds(value)) {
      return CheckFeatureValue(value, absl::StrCat(".", values_field, "[", i, "]"));
    }
    add(key, value);
  }
  return absl::OkStatus();
}

// Checks and hands on the packed features of one namespace: names, then
// ids, then keys. Errors are relative to the namespace.
absl::Status CheckPacked(const v1::Namespace& ns, const ExampleLimits& limits, ExampleSink* sink) {
  if (ns.names_size() > 0 || ns.values_size() > 0) {
    absl::Status s = CheckPackedList(
        ns.names(), ns.values(), "names", "values", limits,
        [sink](const std::string& name, float value) { sink->AddNamed(name, value); });
    if (!s.ok()) return s;
  }
  if (ns.ids_size() > 0 || ns.id_values_size() > 0) {
    absl::Status s = CheckPackedList(ns.ids(), ns.id_values(), "ids", "id_values", limits,
                                     [sink](uint64_t id, float value) { sink->AddId(id, value); });
    if (!s.ok()) return s;
  }
  if (ns.keys_size() > 0 && ns.key_values_size() == 0) {
    sink->AddUnitKeys(absl::MakeConstSpan(ns.keys().data(), ns.keys_size()));
  } else if (ns.key_values_size() > 0) {
    absl::Status s =
        CheckPackedList(ns.keys(), ns.key_values(), "keys", "key_values", limits,
                        [sink](uint64_t key, float value) { sink->AddKey(key, value); });
    if (!s.ok()) return s;
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

void LabeledExampleToProto(const LabeledExample& example, v1::LabeledExample* out) {
  out->set_label(example.label);
  if (example.importance != 1.0f) out->set_importance(example.importance);
  v1::Example* e = out->mutable_example();
  for (const Namespace& ns : example.example.namespaces) {
    v1::Namespace* n = e->add_namespaces();
    n->set_name(ns.name);
    for (const Feature& f : ns.features) {
      v1::Feature* p = n->add_features();
      if (f.has_id) {
        p->set_id(f.id);
      } else {
        p->set_name(f.name);
      }
      if (f.value != 1.0f) p->set_value(f.value);
    }
  }
}

}  // namespace clickd
