// FeatureHasher turns an Example into (64-bit key, value) pairs.
//
// The hash is XXH3-64 with documented seeds (docs/hashing.md), so that a
// client in any language can reproduce keys:
//   namespace hash  ns  = XXH3_64(namespace name bytes, seed)
//   named feature   key = XXH3_64(feature name bytes, ns)
//   id feature      key = XXH3_64(id as 8 little-endian bytes, ns)
//   bias            key = XXH3_64("clickd.bias", seed)
//   cross a x b [x c] key = XXH3_64(key_a || key_b [|| key_c], seed), each as
//                         8 little-endian bytes, value = product of values
// Crosses use the unfolded keys; folding to 2^bits slots (VW's -b) is the last
// step. A FeatureHasher is immutable after construction and safe to share.
#ifndef CLICKD_CORE_FEATURES_HASHER_H_
#define CLICKD_CORE_FEATURES_HASHER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/features/example.h"

namespace clickd {

struct HashingConfig {
  uint64_t seed = 0;
  // 0 keeps full 64-bit keys; 1..62 folds keys into 2^bits slots.
  int bits = 0;
  // Adds a constant feature with value 1 to every example.
  bool bias = true;
  // Each entry names 2 or 3 namespaces whose features are crossed (VW's -q / --cubic).
  std::vector<std::vector<std::string>> interactions;
};

// Checks bits and interaction arity; errors name the field and the limit.
absl::Status ValidateHashingConfig(const HashingConfig& config);

struct HashedFeature {
  uint64_t key;
  float value;
  friend bool operator==(const HashedFeature&, const HashedFeature&) = default;
};

class FeatureHasher {
 public:
  explicit FeatureHasher(HashingConfig config);

  const HashingConfig& config() const { return config_; }

  // Appends the example's features, its crosses and the bias to `out`, then
  // merges repeated keys by adding their values (so that one coordinate gets
  // one gradient), in key order. Takes a caller-owned buffer because this is
  // the per-example hot path and the buffer's capacity is reused.
  void Hash(const Example& example, std::vector<HashedFeature>* out) const;

  uint64_t NamespaceHash(std::string_view name) const;
  static uint64_t NamedKey(uint64_t namespace_hash, std::string_view name);
  static uint64_t IdKey(uint64_t namespace_hash, uint64_t id);
  uint64_t BiasKey() const;
  uint64_t CrossKey(const uint64_t* keys, int count) const;
  uint64_t Fold(uint64_t key) const { return key & fold_mask_; }

 private:
  void AppendCrosses(const Example& example, const std::vector<HashedFeature>& unfolded,
                     const std::vector<size_t>& namespace_begin,
                     std::vector<HashedFeature>* out) const;

  HashingConfig config_;
  uint64_t fold_mask_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FEATURES_HASHER_H_
