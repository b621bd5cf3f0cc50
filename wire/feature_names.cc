#include "wire/feature_names.h"

#include "absl/strings/str_cat.h"

namespace clickd {

void AddFeatureNames(const FeatureHasher& hasher, const v1::Example& example, FeatureNames* names) {
  for (const v1::Namespace& ns : example.namespaces()) {
    const uint64_t ns_hash = hasher.NamespaceHash(ns.name());
    for (const v1::Feature& f : ns.features()) {
      if (f.has_name()) {
        names->try_emplace(hasher.Fold(FeatureHasher::NamedKey(ns_hash, f.name())),
                           absl::StrCat(ns.name(), ":", f.name()));
      } else if (f.key_case() == v1::Feature::kId) {
        names->try_emplace(hasher.Fold(FeatureHasher::IdKey(ns_hash, f.id())),
                           absl::StrCat(ns.name(), ":#", f.id()));
      }
    }
    for (const std::string& name : ns.names()) {
      names->try_emplace(hasher.Fold(FeatureHasher::NamedKey(ns_hash, name)),
                         absl::StrCat(ns.name(), ":", name));
    }
    for (uint64_t id : ns.ids()) {
      names->try_emplace(hasher.Fold(FeatureHasher::IdKey(ns_hash, id)),
                         absl::StrCat(ns.name(), ":#", id));
    }
  }
}

void AddBiasName(const FeatureHasher& hasher, FeatureNames* names) {
  if (hasher.config().bias) names->try_emplace(hasher.Fold(hasher.BiasKey()), "bias");
}

}  // namespace clickd
