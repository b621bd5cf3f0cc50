// FactorizationConfig's names and validation (model_config.h).
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/model/model_config.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

std::string_view FactorizationKindName(FactorizationConfig::Kind kind) {
  switch (kind) {
    case FactorizationConfig::Kind::kNone:
      return "none";
    case FactorizationConfig::Kind::kFm:
      return "fm";
    case FactorizationConfig::Kind::kFfm:
      return "ffm";
  }
  return "unknown";
}

absl::Status ParseFactorizationKind(std::string_view name, FactorizationConfig::Kind* kind) {
  for (auto k : {FactorizationConfig::Kind::kNone, FactorizationConfig::Kind::kFm,
                 FactorizationConfig::Kind::kFfm}) {
    if (name == FactorizationKindName(k)) {
      *kind = k;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("factorization.kind \"", std::string(name),
                                                 "\" is unknown; one of: none, fm, ffm"));
}

uint64_t FactorRowBytes(const FactorizationConfig& f) {
  if (!f.enabled()) return 0;
  const uint64_t floats = static_cast<uint64_t>(f.dim) *
                          (f.kind == FactorizationConfig::Kind::kFfm ? f.fields.size() : 1);
  return sizeof(uint64_t) + 2 * floats * sizeof(float);
}

const std::vector<std::string>& FactorizationFields(const ModelConfig& config) {
  if (config.factorization.enabled()) return config.factorization.fields;
  for (const ModelVariant& v : config.variants) {
    if (v.factorization.enabled()) return v.factorization.fields;
  }
  return config.factorization.fields;  // empty
}

uint64_t FactorRowBytesPerFeature(const ModelConfig& config) {
  uint64_t bytes = FactorRowBytes(config.factorization);
  for (const ModelVariant& v : config.variants) bytes += FactorRowBytes(v.factorization);
  return bytes;
}

absl::Status ValidateFactorizationConfig(const ModelConfig& config) {
  const FactorizationConfig& f = config.factorization;
  if (!f.enabled()) {
    const FactorizationConfig defaults;
    if (f.kind != FactorizationConfig::Kind::kNone) {
      return absl::InvalidArgumentError(absl::StrCat("factorization.kind ",
                                                     static_cast<uint32_t>(f.kind),
                                                     " is unknown; one of: none, fm, ffm"));
    }
    if (f.dim != defaults.dim || !f.fields.empty() || f.init_scale != defaults.init_scale ||
        f.init_seed != defaults.init_seed || f.eta != defaults.eta || f.l2 != defaults.l2 ||
        f.normalize != defaults.normalize) {
      return absl::InvalidArgumentError(
          "factorization has settings but kind none; set kind fm or ffm, or leave them unset");
    }
    return absl::OkStatus();
  }
  if (f.dim < 1 || f.dim > kMaxFactorDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("factorization.dim is ", f.dim, "; must be in 1..", kMaxFactorDim));
  }
  if (f.fields.empty() || f.fields.size() > kMaxFactorFields) {
    return absl::InvalidArgumentError(absl::StrCat("factorization.fields has ", f.fields.size(),
                                                   " namespaces; must have 1..", kMaxFactorFields));
  }
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < f.fields.size(); ++i) {
    const std::string& name = f.fields[i];
    const std::string field = absl::StrCat("factorization.fields[", i, "]");
    if (name.empty() || name.size() > kMaxInteractionNameBytes ||
        name.find(',') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is \"", name, "\"; a sparse namespace name is 1..",
                       kMaxInteractionNameBytes, " bytes without a comma"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, " \"", name, "\" is named twice"));
    }
    for (const DenseNamespace& ns : config.dense_namespaces) {
      if (ns.name == name) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, " \"", name,
                         "\" is unknown as a sparse namespace: it is a dense namespace, whose "
                         "values have no features to factorize"));
      }
    }
  }
  if (f.init_scale != 0) {
    if (absl::Status s = CheckParamInRange("factorization.init_scale", f.init_scale, kMinRate, 1);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = CheckParamInRange("factorization.eta", f.eta, kMinRate, kMaxRate); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckParamInRange("factorization.l2", f.l2, 0, kMaxScale); !s.ok()) return s;
  const OptimizerType type = config.optimizer.type;
  if (type == OptimizerType::kDense || IsBinaryClassifier(type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "factorization needs an optimizer that steps on the loss gradient (ftrl, adagrad, "
        "adagrad_da, pc_ogd, global_ogd, sgd, metagrad_diag); optimizer is ",
        OptimizerName(config)));
  }
  // A TTL and the memory budget evict a coordinate's factor row with it
  // (the budget counts the rows); the compact encoding has no room for
  // them.
  if (config.memory.encoding != StateEncoding::kFloat) {
    return absl::InvalidArgumentError(
        "factorization needs memory.encoding float: the compact encoding keeps no factor rows");
  }
  return absl::OkStatus();
}

}  // namespace clickd
