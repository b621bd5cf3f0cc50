#include "bench/seed001/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "core/optim/loss.h"

namespace clickd::seed001 {
namespace {

// Uniform in [0, 1) from the top 53 bits of one draw.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Standard normal by Box-Muller (one value per two draws; simple, and
// deterministic given the engine's sequence).
double Normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - Uniform(rng);  // (0, 1]
  const double u2 = Uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Samples ranks 0..V-1 with probability proportional to (rank + 1)^-s by
// inverting the cumulative table.
class ZipfSampler {
 public:
  ZipfSampler(uint32_t vocabulary, double s) : cumulative_(vocabulary) {
    double total = 0;
    for (uint32_t r = 0; r < vocabulary; ++r) {
      total += std::pow(static_cast<double>(r) + 1.0, -s);
      cumulative_[r] = total;
    }
  }

  uint32_t Sample(std::mt19937_64& rng) const {
    const double u = Uniform(rng) * cumulative_.back();
    auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return static_cast<uint32_t>(
        std::min<size_t>(it - cumulative_.begin(), cumulative_.size() - 1));
  }

 private:
  std::vector<double> cumulative_;
};

struct Field {
  uint64_t namespace_hash;
  ZipfSampler sampler;
  std::vector<double> weights;  // true weight of each rank
};

std::vector<Field> MakeFields(const SyntheticConfig& config, const FeatureHasher& hasher) {
  // The true weights come from their own stream, so that they do not depend
  // on how many examples are drawn.
  std::mt19937_64 rng(config.seed * 0x9E3779B97F4A7C15ull + 1);
  std::vector<Field> fields;
  for (const FieldSpec& spec : config.fields) {
    Field f{hasher.NamespaceHash(spec.name), ZipfSampler(spec.vocabulary, config.zipf_s), {}};
    f.weights.resize(spec.vocabulary);
    for (double& w : f.weights) {
      w = std::clamp(config.field_mean + config.sigma * Normal(rng), -1.0, 1.0);
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

}  // namespace

SyntheticData GenerateSynthetic(const SyntheticConfig& config) {
  const FeatureHasher hasher{HashingConfig{}};
  const std::vector<Field> fields = MakeFields(config, hasher);
  std::mt19937_64 rng(config.seed);
  SyntheticData data;
  data.width = fields.size() + 1;
  data.features.reserve(config.examples * data.width);
  data.labels.reserve(config.examples);
  data.true_margins.reserve(config.examples);
  for (uint64_t t = 0; t < config.examples; ++t) {
    double margin = config.bias;
    data.features.push_back({hasher.BiasKey(), 1.0f});
    for (const Field& f : fields) {
      const uint32_t rank = f.sampler.Sample(rng);
      data.features.push_back({FeatureHasher::IdKey(f.namespace_hash, rank), 1.0f});
      margin += f.weights[rank];
    }
    data.true_margins.push_back(margin);
    data.labels.push_back(Uniform(rng) < Sigmoid(margin) ? 1.0f : 0.0f);
  }
  return data;
}

}  // namespace clickd::seed001
