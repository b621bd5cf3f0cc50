#include "core/features/hasher.h"

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace clickd {
namespace {

// Golden vectors: tests/data/hashing_golden.json, the one copy that the
// Python, Go and Java tests read too (docs/hashing.md lists them), so no
// language can drift alone.
struct GoldenVector {
  uint64_t seed = 0;
  std::string kind;
  nlohmann::json row;
  uint64_t key = 0;
};

std::vector<GoldenVector> ReadGolden() {
  std::ifstream in(CLICKD_HASHING_GOLDEN);
  EXPECT_TRUE(in.good()) << "cannot open " << CLICKD_HASHING_GOLDEN;
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<GoldenVector> out;
  for (const nlohmann::json& row : doc.at("vectors")) {
    GoldenVector v;
    v.seed = row.at("seed").get<uint64_t>();
    v.kind = row.at("kind").get<std::string>();
    v.row = row;
    v.key = std::stoull(row.at("key").get<std::string>(), nullptr, 16);
    out.push_back(std::move(v));
  }
  return out;
}

// The unfolded key of {"namespace": ..., "name"|"id": ...}.
uint64_t GoldenFeatureKey(const FeatureHasher& h, const nlohmann::json& part) {
  const uint64_t ns = h.NamespaceHash(part.at("namespace").get<std::string>());
  if (part.contains("id")) return FeatureHasher::IdKey(ns, part.at("id").get<uint64_t>());
  return FeatureHasher::NamedKey(ns, part.at("name").get<std::string>());
}

// Checks every vector for which `select` holds; returns how many.
template <typename Select>
int CheckGolden(Select select) {
  int checked = 0;
  for (const GoldenVector& v : ReadGolden()) {
    if (!select(v)) continue;
    HashingConfig config;
    config.seed = v.seed;
    if (v.row.contains("bits")) config.bits = v.row.at("bits").get<uint32_t>();
    FeatureHasher h(config);
    uint64_t got = 0;
    if (v.kind == "xxh3" || v.kind == "namespace") {
      // NamespaceHash is XXH3_64(bytes, seed): the library's own function.
      got = h.NamespaceHash(v.row.at(v.kind == "xxh3" ? "input" : "namespace").get<std::string>());
    } else if (v.kind == "feature") {
      got = h.Fold(GoldenFeatureKey(h, v.row));
    } else if (v.kind == "bias") {
      got = h.BiasKey();
    } else if (v.kind == "cross") {
      uint64_t keys[3] = {0, 0, 0};
      const nlohmann::json& parts = v.row.at("parts");
      EXPECT_LE(parts.size(), 3u);
      for (size_t i = 0; i < parts.size() && i < 3; ++i) keys[i] = GoldenFeatureKey(h, parts[i]);
      got = h.CrossKey(keys, static_cast<int>(parts.size()));
    } else {
      ADD_FAILURE() << "unknown kind " << v.kind;
    }
    EXPECT_EQ(got, v.key) << v.row.dump();
    ++checked;
  }
  return checked;
}

TEST(HasherGolden, XxH3ReferenceValue) {
  // XXH3_64("") with seed 0 is the library's published check value.
  EXPECT_EQ(CheckGolden([](const GoldenVector& v) { return v.kind == "xxh3"; }), 1);
}

TEST(HasherGolden, SeedZero) {
  EXPECT_EQ(CheckGolden([](const GoldenVector& v) { return v.seed == 0 && v.kind != "xxh3"; }), 9);
}

TEST(HasherGolden, Seed42) {
  EXPECT_EQ(CheckGolden([](const GoldenVector& v) { return v.seed == 42; }), 5);
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

namespace clickd {
namespace {

TEST(FeatureHasherFields, FeaturesKeepTheirFieldAndKeysDoNotChange) {
  HashingConfig config;
  config.bits = 20;
  config.interactions = {{"user", "ad"}};
  const FeatureHasher plain(config);
  const FeatureHasher fielded(config, {"ad", "user"});
  Example e;
  e.namespaces = {{"user", {Feature::Named("u1"), Feature::WithId(7, 2.0f)}},
                  {"site", {Feature::Named("s1")}},
                  {"ad", {Feature::Named("a1")}}};
  std::vector<HashedFeature> a;
  std::vector<HashedFeature> b;
  plain.Hash(e, &a);
  fielded.Hash(e, &b);
  ASSERT_EQ(a.size(), b.size());
  std::vector<uint32_t> fields;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].value, b[i].value);
    EXPECT_EQ(a[i].field, kNoField);
    fields.push_back(b[i].field);
  }
  // u1, 7 (user: 1), s1 (none), a1 (ad: 0), the cross and the bias (none).
  EXPECT_EQ(fields, (std::vector<uint32_t>{1, 1, kNoField, 0, kNoField, kNoField, kNoField}));
  // A context and candidate hashed apart keep them too.
  HashedContext context;
  Example ctx;
  ctx.namespaces = {e.namespaces[0]};
  fielded.HashContext(ctx, &context);
  Example cand;
  cand.namespaces = {e.namespaces[2]};
  std::vector<HashedFeature> k;
  fielded.HashCandidate(context, cand, &k);
  EXPECT_EQ(context.features[0].field, 1u);
  EXPECT_EQ(k[0].field, 0u);
  EXPECT_EQ(k[1].field, kNoField);  // the cross
}

// One collector reused over a run of examples (NextExample between them,
// as HashPredictRequest does for its candidates) collects what a fresh
// collector per example does: the same keys, fields and interaction terms,
// whether the next example's namespaces repeat the last one's or not.
TEST(Hasher, ReusedCollectorCollectsAsFreshOnes) {
  HashingConfig config;
  config.interactions = {{"u", "a"}, {"a", "a"}};
  const FeatureHasher hasher(config, {"a", "u"});
  const std::vector<std::vector<std::pair<std::string, std::string>>> examples = {
      {{"a", "x"}, {"a", "y"}},  {{"a", "z"}}, {{"u", "x"}, {"a", "x"}}, {{"u", "x"}},
      {{"s", "x"}, {"aa", "x"}}, {{"a", "w"}}, {{"", "x"}, {"a", "x"}}};
  std::vector<HashedFeature> reused;
  FeatureHasher::TermLists reused_terms;
  FeatureHasher::Collector collector(hasher, &reused, &reused_terms);
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) collector.NextExample();
    std::vector<HashedFeature> fresh;
    FeatureHasher::TermLists fresh_terms;
    FeatureHasher::Collector one(hasher, &fresh, &fresh_terms);
    const size_t first = reused.size();
    for (const auto& [ns, name] : examples[i]) {
      collector.StartNamespace(ns);
      collector.AddNamed(name, 1.0f);
      one.StartNamespace(ns);
      one.AddNamed(name, 1.0f);
    }
    EXPECT_EQ(std::vector<HashedFeature>(reused.begin() + first, reused.end()), fresh) << i;
    EXPECT_EQ(reused_terms.size(), fresh_terms.size());
    for (size_t t = 0; t < fresh_terms.size(); ++t) {
      EXPECT_EQ(reused_terms[t], fresh_terms[t]) << i << " term " << t;
    }
  }
}

}  // namespace
}  // namespace clickd
