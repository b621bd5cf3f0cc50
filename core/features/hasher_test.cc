#include "core/features/hasher.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

// Golden vectors, also listed in docs/hashing.md and checked against an
// independent implementation (Python's xxhash) by tests/hashing_golden.py.
TEST(HasherGolden, XxH3ReferenceValue) {
  // XXH3_64("") with seed 0 is the library's published check value.
  EXPECT_EQ(FeatureHasher(HashingConfig{}).NamespaceHash(""), 0x2d06800538d394c2ull);
}

TEST(HasherGolden, SeedZero) {
  FeatureHasher h(HashingConfig{});
  const uint64_t user = h.NamespaceHash("user");
  const uint64_t ad = h.NamespaceHash("ad");
  EXPECT_EQ(user, 0x99e389d25c10af32ull);
  EXPECT_EQ(ad, 0xde5b1b56a0b78045ull);
  EXPECT_EQ(FeatureHasher::NamedKey(user, "country=FR"), 0x4e7766629ead153dull);
  EXPECT_EQ(FeatureHasher::IdKey(user, 12345), 0x60d50635a90a9b43ull);
  EXPECT_EQ(FeatureHasher::NamedKey(ad, "campaign=7"), 0xd5a62f69dd533e23ull);
  EXPECT_EQ(h.BiasKey(), 0x0d3c7b1005d35e2eull);
  const uint64_t keys[3] = {0x4e7766629ead153dull, 0xd5a62f69dd533e23ull, 0x60d50635a90a9b43ull};
  EXPECT_EQ(h.CrossKey(keys, 2), 0xec2ea4de06d3da4eull);
  EXPECT_EQ(h.CrossKey(keys, 3), 0xfb85785b87aa7d67ull);
  HashingConfig folded;
  folded.bits = 18;
  EXPECT_EQ(FeatureHasher(folded).Fold(0x4e7766629ead153dull), 0x1153dull);
}

TEST(HasherGolden, Seed42) {
  HashingConfig config;
  config.seed = 42;
  FeatureHasher h(config);
  const uint64_t user = h.NamespaceHash("user");
  EXPECT_EQ(user, 0xd53b42323a2e7af2ull);
  EXPECT_EQ(FeatureHasher::NamedKey(user, "country=FR"), 0x29066de8c7c5c6e4ull);
  EXPECT_EQ(FeatureHasher::IdKey(user, 12345), 0xcf55aca09cf341ecull);
  EXPECT_EQ(h.BiasKey(), 0x95fb0167ed71dc85ull);
  const uint64_t keys[2] = {0x29066de8c7c5c6e4ull, 0xce846ba958acb04full};
  EXPECT_EQ(h.CrossKey(keys, 2), 0x5f09e826cbced44dull);
}

Example TwoNamespaces() {
  Example e;
  e.namespaces.push_back({"user", {Feature::Named("country=FR"), Feature::WithId(12345, 0.5f)}});
  e.namespaces.push_back({"ad", {Feature::Named("campaign=7", 2.0f)}});
  return e;
}

std::vector<HashedFeature> HashOf(const FeatureHasher& h, const Example& e) {
  std::vector<HashedFeature> out;
  h.Hash(e, &out);
  return out;
}

bool HasKey(const std::vector<HashedFeature>& fs, uint64_t key, float value) {
  for (const auto& f : fs) {
    if (f.key == key) return f.value == value;
  }
  return false;
}

TEST(Hasher, FeaturesAndBiasWithUniqueKeys) {
  FeatureHasher h(HashingConfig{});
  const auto fs = HashOf(h, TwoNamespaces());
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_TRUE(HasKey(fs, 0x4e7766629ead153dull, 1.0f));
  EXPECT_TRUE(HasKey(fs, 0x60d50635a90a9b43ull, 0.5f));
  EXPECT_TRUE(HasKey(fs, 0xd5a62f69dd533e23ull, 2.0f));
  EXPECT_TRUE(HasKey(fs, h.BiasKey(), 1.0f));
  for (size_t i = 1; i < fs.size(); ++i) EXPECT_NE(fs[i - 1].key, fs[i].key);
}

TEST(Hasher, NoBias) {
  HashingConfig config;
  config.bias = false;
  EXPECT_EQ(HashOf(FeatureHasher(config), TwoNamespaces()).size(), 3u);
}

TEST(Hasher, IdsInDifferentNamespacesDiffer) {
  FeatureHasher h(HashingConfig{});
  EXPECT_NE(FeatureHasher::IdKey(h.NamespaceHash("a"), 7),
            FeatureHasher::IdKey(h.NamespaceHash("b"), 7));
}

TEST(Hasher, PairInteractionCrossesEveryFeature) {
  HashingConfig config;
  config.interactions = {{"user", "ad"}};
  FeatureHasher h(config);
  const auto fs = HashOf(h, TwoNamespaces());
  ASSERT_EQ(fs.size(), 4u + 2u);
  const uint64_t ad = 0xd5a62f69dd533e23ull;
  const uint64_t k1[2] = {0x4e7766629ead153dull, ad};
  const uint64_t k2[2] = {0x60d50635a90a9b43ull, ad};
  EXPECT_TRUE(HasKey(fs, h.CrossKey(k1, 2), 2.0f));
  EXPECT_TRUE(HasKey(fs, h.CrossKey(k2, 2), 1.0f));
}

TEST(Hasher, SelfInteractionYieldsEachUnorderedPairOnce) {
  HashingConfig config;
  config.bias = false;
  config.interactions = {{"w", "w"}};
  Example e;
  e.namespaces.push_back({"w", {Feature::Named("a"), Feature::Named("b"), Feature::Named("c")}});
  EXPECT_EQ(HashOf(FeatureHasher(config), e).size(), 3u + 3u);
  config.interactions = {{"w", "w", "w"}};
  EXPECT_EQ(HashOf(FeatureHasher(config), e).size(), 3u + 1u);
}

TEST(Hasher, TripleInteraction) {
  HashingConfig config;
  config.bias = false;
  config.interactions = {{"user", "ad", "user"}};
  // Non-adjacent repeats are crossed in full: 2 x 1 x 2.
  EXPECT_EQ(HashOf(FeatureHasher(config), TwoNamespaces()).size(), 3u + 4u);
}

TEST(Hasher, MissingNamespaceInInteractionAddsNothing) {
  HashingConfig config;
  config.interactions = {{"user", "query"}};
  EXPECT_EQ(HashOf(FeatureHasher(config), TwoNamespaces()).size(), 4u);
}

TEST(Hasher, FoldingKeepsLowBitsAndMergesCollisions) {
  HashingConfig config;
  config.bits = 1;  // two slots: collisions are certain
  config.bias = false;
  Example e;
  e.namespaces.push_back(
      {"n", {Feature::Named("a", 1), Feature::Named("b", 2), Feature::Named("c", 4)}});
  const auto fs = HashOf(FeatureHasher(config), e);
  ASSERT_LE(fs.size(), 2u);
  float total = 0;
  for (const auto& f : fs) {
    EXPECT_LT(f.key, 2u);
    total += f.value;
  }
  EXPECT_EQ(total, 7.0f);  // merged values add up: one gradient per coordinate
}

TEST(Hasher, RepeatedFeatureMergesValues) {
  HashingConfig config;
  config.bias = false;
  Example e;
  e.namespaces.push_back({"n", {Feature::Named("a", 1.5f), Feature::Named("a", 2.0f)}});
  const auto fs = HashOf(FeatureHasher(config), e);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].value, 3.5f);
}

TEST(Hasher, ZeroValuedFeaturesAreDropped) {
  HashingConfig config;
  config.bias = false;
  Example e;
  e.namespaces.push_back({"n", {Feature::Named("a", 0.0f), Feature::Named("b")}});
  EXPECT_EQ(HashOf(FeatureHasher(config), e).size(), 1u);
}

TEST(Hasher, AppendsAfterExistingContents) {
  FeatureHasher h(HashingConfig{});
  std::vector<HashedFeature> out = {{1, 1.0f}};
  h.Hash(TwoNamespaces(), &out);
  EXPECT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].key, 1u);
}

Example RandomExample(std::mt19937* rng, const std::vector<std::string>& names) {
  Example e;
  for (const std::string& name : names) {
    if ((*rng)() % 3 == 0) continue;
    Namespace ns{name, {}};
    const int k = static_cast<int>((*rng)() % 4);
    for (int i = 0; i < k; ++i) {
      if ((*rng)() % 2) {
        ns.features.push_back(Feature::Named("f" + std::to_string((*rng)() % 5), 0.5f + i));
      } else {
        ns.features.push_back(Feature::WithId((*rng)() % 5, 1.5f));
      }
    }
    e.namespaces.push_back(ns);
  }
  return e;
}

// Context hashed once + each candidate's part == hashing the concatenated
// example: Predict's fast path scores exactly what Update trains on.
TEST(Hasher, ContextPlusCandidateEqualsWholeExample) {
  HashingConfig config;
  config.interactions = {{"u", "a"},      {"a", "a"},      {"u", "u"},
                         {"u", "a", "p"}, {"a", "u", "a"}, {"p", "p", "p"}};
  for (int bits : {0, 6}) {
    config.bits = bits;
    FeatureHasher h(config);
    std::mt19937 rng(bits + 1);
    for (int trial = 0; trial < 300; ++trial) {
      const Example context = RandomExample(&rng, {"u", "p", "a"});
      HashedContext hc;
      h.HashContext(context, &hc);
      for (int c = 0; c < 3; ++c) {
        const Example candidate = RandomExample(&rng, {"a", "p", "u"});
        std::vector<HashedFeature> part;
        h.HashCandidate(hc, candidate, &part);
        std::vector<HashedFeature> split = hc.features;
        split.insert(split.end(), part.begin(), part.end());
        SortAndMerge(&split);
        Example whole = context;
        whole.namespaces.insert(whole.namespaces.end(), candidate.namespaces.begin(),
                                candidate.namespaces.end());
        std::vector<HashedFeature> expected = HashOf(h, whole);
        SortAndMerge(&expected);
        ASSERT_EQ(split, expected) << "trial " << trial << " bits " << bits;
      }
    }
  }
}

// The hash-table merge agrees with sorting, for small inputs and for the
// large ones that fall back to a sort.
TEST(Hasher, MergeDuplicatesAgreesWithSortAndMerge) {
  std::mt19937_64 rng(5);
  for (size_t n : {0, 1, 2, 7, 40, 511, 513, 3000}) {
    std::vector<HashedFeature> fs;
    for (size_t i = 0; i < n; ++i) fs.push_back({rng() % (n / 2 + 1), 1.0f + (i % 3)});
    std::vector<HashedFeature> merged = {{999999, 1.0f}};  // a prefix left alone
    merged.insert(merged.end(), fs.begin(), fs.end());
    MergeDuplicates(&merged, 1);
    EXPECT_EQ(merged[0].key, 999999u);
    std::vector<HashedFeature> a(merged.begin() + 1, merged.end());
    SortAndMerge(&a);
    std::vector<HashedFeature> b = fs;
    SortAndMerge(&b);
    EXPECT_EQ(a, b) << n;
  }
}

TEST(HashingConfig, Validation) {
  HashingConfig config;
  EXPECT_TRUE(ValidateHashingConfig(config).ok());
  config.bits = 63;
  EXPECT_NE(ValidateHashingConfig(config).message().find("hashing.bits"), std::string::npos);
  config.bits = 18;
  config.interactions = {{"a"}};
  const auto status = ValidateHashingConfig(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("hashing.interactions[0]"), std::string::npos);
}

TEST(HashingConfig, InteractionCountAndNameLengthAreBounded) {
  HashingConfig config;
  config.interactions.assign(kMaxInteractions, {"user", "ad"});
  EXPECT_TRUE(ValidateHashingConfig(config).ok());
  config.interactions.push_back({"user", "ad"});
  EXPECT_EQ(ValidateHashingConfig(config).message(),
            "hashing.interactions has 33 entries; the limit is 32");

  config.interactions = {{"user", std::string(kMaxInteractionNameBytes, 'a')}};
  EXPECT_TRUE(ValidateHashingConfig(config).ok());
  config.interactions = {{"user", std::string(kMaxInteractionNameBytes + 1, 'a')}};
  EXPECT_EQ(ValidateHashingConfig(config).message(),
            "hashing.interactions[0][1] is 65 bytes long; must be 1..64");
  config.interactions = {{"", "ad"}};
  EXPECT_EQ(ValidateHashingConfig(config).message(),
            "hashing.interactions[0][0] is 0 bytes long; must be 1..64");
}

}  // namespace
}  // namespace clickd
