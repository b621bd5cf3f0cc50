#include "core/features/feature_count.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/features/hasher.h"

namespace clickd {
namespace {

// An example whose feature names are unique across the whole test, so that
// no two hashed keys collide and Hash merges nothing: its output size is
// then exactly the count before merging. Some values are zero (skipped).
Example RandomExample(std::mt19937_64& rng, const std::vector<std::string>& names, int* next_id) {
  Example e;
  std::uniform_int_distribution<int> namespaces(0, 4), features(0, 6), pick(0, 9);
  const int n = namespaces(rng);
  for (int i = 0; i < n; ++i) {
    Namespace ns;
    ns.name = names[pick(rng) % names.size()];
    const int f = features(rng);
    for (int j = 0; j < f; ++j) {
      ns.features.push_back(Feature::Named("f" + std::to_string((*next_id)++),
                                           pick(rng) == 0 ? 0.0f : 1.0f + static_cast<float>(j)));
    }
    e.namespaces.push_back(std::move(ns));
  }
  return e;
}

std::vector<HashingConfig> Configs() {
  std::vector<HashingConfig> configs(8);
  configs[1].bias = false;
  configs[2].interactions = {{"a", "b"}};
  configs[3].interactions = {{"a", "a"}, {"b", "c"}};
  configs[4].interactions = {{"a", "b", "c"}};
  configs[5].interactions = {{"a", "a", "a"}, {"a", "a", "b"}};
  configs[6].interactions = {{"a", "b", "b"}, {"a", "b", "a"}, {"c", "c"}};
  configs[7].interactions = {{"a", "b"}, {"a", "b", "c"}, {"b", "b", "b"}};
  configs[7].bias = false;
  return configs;
}

TEST(CountHashedFeatures, EqualsHashOutputSize) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> names = {"a", "b", "c", "d", ""};
  int next_id = 0;
  for (const HashingConfig& config : Configs()) {
    const FeatureHasher hasher(config);
    for (int trial = 0; trial < 300; ++trial) {
      const Example e = RandomExample(rng, names, &next_id);
      std::vector<HashedFeature> hashed;
      hasher.Hash(e, &hashed);
      ASSERT_EQ(CountHashedFeatures(config, nullptr, e), hashed.size()) << "trial " << trial;
    }
  }
}

TEST(CountHashedFeatures, ContextAndCandidateEqualHashContextPlusCandidate) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  int next_id = 0;
  for (const HashingConfig& config : Configs()) {
    const FeatureHasher hasher(config);
    for (int trial = 0; trial < 300; ++trial) {
      const Example context = RandomExample(rng, names, &next_id);
      const Example candidate = RandomExample(rng, names, &next_id);
      HashedContext hashed_context;
      hasher.HashContext(context, &hashed_context);
      std::vector<HashedFeature> hashed;
      hasher.HashCandidate(hashed_context, candidate, &hashed);
      ASSERT_EQ(CountHashedFeatures(config, &context, candidate),
                hashed_context.features.size() + hashed.size())
          << "trial " << trial;
      // The context alone is what HashContext yields.
      ASSERT_EQ(CountHashedFeatures(config, nullptr, context), hashed_context.features.size());
    }
  }
}

TEST(CountHashedFeatures, CountsCrossesFromSizesAlone) {
  HashingConfig config;
  config.interactions = {{"user", "ad"}, {"user", "ad", "site"}, {"q", "q", "q"}};
  const std::vector<NamespaceSize> example = {
      {"user", 1000}, {"ad", 1000}, {"site", 2500}, {"q", 10}};
  // 4510 own + bias + 1e6 + 2.5e9 + C(10, 3).
  EXPECT_EQ(CountHashedFeatures(config, {}, example),
            4510u + 1u + 1'000'000u + 2'500'000'000u + 120u);
}

TEST(CountHashedFeatures, SaturatesInsteadOfWrapping) {
  HashingConfig config;
  config.interactions = {{"a", "b", "c"}, {"a", "a", "a"}};
  const uint64_t big = uint64_t{1} << 40;
  const std::vector<NamespaceSize> example = {{"a", big}, {"b", big}, {"c", big}};
  EXPECT_EQ(CountHashedFeatures(config, {}, example), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(SaturatingAdd(std::numeric_limits<uint64_t>::max(), 1),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(SaturatingMul(uint64_t{1} << 32, uint64_t{1} << 32),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(SaturatingMul(3, 5), 15u);
}

}  // namespace
}  // namespace clickd
