// Synthetic ads-like logistic data with a known true model, for the seed 001
// Table 2 analogue (Streeter & McMahan 2010, section 5.2).
//
// Every example has a bias plus exactly one value from each of several
// categorical "fields" (think query, ad, advertiser, ...). A field's values
// are drawn with Zipf(s) frequencies over its vocabulary (rank r has
// probability proportional to r^-s), so a few values are very common and
// most are rare. The true model gives each (field, value) a weight
//   w = clamp(field_mean + sigma * z, -1, 1),  z ~ N(0, 1),
// the bias weight `bias`, and the label is 1 with probability
// sigmoid(true margin). All true weights lie in [-1, 1], so the true model
// is inside the paper's feasible set F = [-1, 1]^n.
//
// Generation is deterministic for a given config: it uses raw
// std::mt19937_64 draws (whose sequence the C++ standard fixes) and maps
// them to numbers itself. A SyntheticData is a plain value, not synchronized.
#ifndef CLICKD_BENCH_SEED001_SYNTHETIC_DATA_H_
#define CLICKD_BENCH_SEED001_SYNTHETIC_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "core/features/hasher.h"

namespace clickd::seed001 {

struct FieldSpec {
  std::string name;
  uint32_t vocabulary = 0;
};

struct SyntheticConfig {
  uint64_t seed = 1;
  uint64_t examples = 100000;
  double zipf_s = 1.1;
  double bias = -1.0;
  double field_mean = -0.43;
  double sigma = 0.35;
  std::vector<FieldSpec> fields = {{"f10", 10},     {"f30", 30},      {"f100", 100},
                                   {"f1k", 1000},   {"f3k", 3000},    {"f10k", 10000},
                                   {"f30k", 30000}, {"f100k", 100000}};
};

// T examples of a fixed width (bias + one feature per field), stored flat.
struct SyntheticData {
  size_t width = 0;
  std::vector<HashedFeature> features;  // examples() * width
  std::vector<float> labels;            // 0 or 1
  std::vector<double> true_margins;     // the true model's w . x

  size_t examples() const { return labels.size(); }
  absl::Span<const HashedFeature> Example(size_t t) const {
    return absl::MakeConstSpan(features.data() + t * width, width);
  }
};

// Generates the stream. Keys are FeatureHasher keys with the default hashing
// config (seed 0, no folding): IdKey(NamespaceHash(field), rank) and BiasKey().
SyntheticData GenerateSynthetic(const SyntheticConfig& config);

}  // namespace clickd::seed001

#endif  // CLICKD_BENCH_SEED001_SYNTHETIC_DATA_H_
