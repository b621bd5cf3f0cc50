// Names for the keys of a Predict's features, for explanations: the folded
// key of each plain feature of a context and a candidate, as the model's
// hasher makes it, mapped back to "namespace:name" (Feature.name and
// Namespace.names), "namespace:#id" (Feature.id and Namespace.ids), and the
// bias to "bias". Crosses and pre-hashed keys get no name: the key
// identifies them (docs/feedback.md#explanations).
//
// Pure function; built only for a request that asks for explanations.
#ifndef CLICKD_WIRE_FEATURE_NAMES_H_
#define CLICKD_WIRE_FEATURE_NAMES_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "clickd/v1/clickd.pb.h"
#include "core/features/hasher.h"

namespace clickd {

using FeatureNames = absl::flat_hash_map<uint64_t, std::string>;

// Adds the names of `example`'s plain features to *names (a key already
// named keeps its first name).
void AddFeatureNames(const FeatureHasher& hasher, const v1::Example& example, FeatureNames* names);

// The bias's name, if the model has one.
void AddBiasName(const FeatureHasher& hasher, FeatureNames* names);

}  // namespace clickd

#endif  // CLICKD_WIRE_FEATURE_NAMES_H_
