// Examples as clients and input files describe them, before hashing.
//
// An example is a list of namespaces; each namespace holds features that are
// named either by a string (hashed with the model's seed) or by a 64-bit id
// the client already computed. Every feature has a value, 1 by default.
// These are plain values: not synchronized, owned by whoever built them.
#ifndef CLICKD_CORE_FEATURES_EXAMPLE_H_
#define CLICKD_CORE_FEATURES_EXAMPLE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace clickd {

struct Feature {
  // Used when `has_id` is false.
  std::string name;
  // Used when `has_id` is true: a pre-hashed id, still mixed with the
  // namespace so that equal ids in two namespaces stay distinct (unless
  // `is_key`).
  uint64_t id = 0;
  bool has_id = false;
  float value = 1.0f;
  // With `has_id`: `id` is a key the client already hashed with the
  // model's scheme (docs/hashing.md), unfolded, used as it is.
  bool is_key = false;

  static Feature Named(std::string name, float value = 1.0f) {
    return Feature{std::move(name), 0, false, value, false};
  }
  static Feature WithId(uint64_t id, float value = 1.0f) {
    return Feature{{}, id, true, value, false};
  }
  static Feature WithKey(uint64_t key, float value = 1.0f) {
    return Feature{{}, key, true, value, true};
  }
};

struct Namespace {
  std::string name;
  std::vector<Feature> features;
};

// The values of one dense namespace a model declares (its dense block,
// core/model/dense_block.h): exactly that namespace's dimension of them.
struct DenseValues {
  std::string name;
  std::vector<float> values;
};

struct Example {
  std::vector<Namespace> namespaces;
  std::vector<DenseValues> dense;
};

// A training example: features, a label in the loss's domain, and an
// importance weight that multiplies the example's gradient.
struct LabeledExample {
  Example example;
  float label = 0.0f;
  float importance = 1.0f;
};

}  // namespace clickd

#endif  // CLICKD_CORE_FEATURES_EXAMPLE_H_
