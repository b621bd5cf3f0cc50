// CountHashedFeatures: how many hashed features an example yields, counted
// from namespace sizes alone, without hashing anything.
//
// The count is exactly the number of (key, value) pairs FeatureHasher::Hash
// appends before merging repeated keys: every non-zero feature, every cross
// of every interaction (the product of its terms' feature counts, or the
// number of strictly increasing positions where adjacent terms name the
// same namespace, as Hash crosses them), and the bias. It is what learning
// and scoring the example costs, so the server checks it against its limits
// before any work starts (interactions multiply features: 3 namespaces of
// 1,000 features crossed 3 ways are 1e9 crosses). Sums and products
// saturate at UINT64_MAX instead of wrapping.
//
// Pure functions; safe to call from any thread.
#ifndef CLICKD_CORE_FEATURES_FEATURE_COUNT_H_
#define CLICKD_CORE_FEATURES_FEATURE_COUNT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "core/features/example.h"
#include "core/features/hasher.h"

namespace clickd {

// One namespace of an example as the count sees it: its name and how many
// of its features have a non-zero value (Hash skips zeros).
struct NamespaceSize {
  std::string_view name;
  uint64_t features = 0;
};

// Features that hashing `context` (may be empty) followed by `example` as
// one example yields: what learning an impression's candidate hashes.
uint64_t CountHashedFeatures(const HashingConfig& config, absl::Span<const NamespaceSize> context,
                             absl::Span<const NamespaceSize> example);

// The same for core Examples (a null context is an empty one).
uint64_t CountHashedFeatures(const HashingConfig& config, const Example* context,
                             const Example& example);

// The namespace sizes of an example, pointing into its names.
std::vector<NamespaceSize> NamespaceSizes(const Example& example);

// a + b and a * b, saturating at UINT64_MAX. Inline: a request's cost adds
// once per namespace of every candidate.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  uint64_t out;
  return __builtin_add_overflow(a, b, &out) ? ~uint64_t{0} : out;
}
inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t out;
  return __builtin_mul_overflow(a, b, &out) ? ~uint64_t{0} : out;
}

}  // namespace clickd

#endif  // CLICKD_CORE_FEATURES_FEATURE_COUNT_H_
