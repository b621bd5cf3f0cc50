#include "core/store/feature_admission.h"

#include <cmath>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using Policy = AdmissionOptions::Policy;

AdmissionOptions Bloom(uint32_t min_count, uint64_t counters = 1 << 16,
                       uint64_t generation = 1 << 20) {
  return {.policy = Policy::kBloom,
          .min_count = min_count,
          .counters = counters,
          .generation_sightings = generation};
}

TEST(FeatureAdmissionTest, AllAdmitsEverything) {
  FeatureAdmission admission({});
  for (uint64_t key = 0; key < 100; ++key) EXPECT_TRUE(admission.Admit(key, key));
}

TEST(FeatureAdmissionTest, PoissonAdmitsAFractionPAndIsAFunctionOfKeyAndRound) {
  const double p = 0.03;
  FeatureAdmission admission({.policy = Policy::kPoisson, .probability = p});
  FeatureAdmission again({.policy = Policy::kPoisson, .probability = p});
  const int n = 200000;
  int admitted = 0;
  for (int i = 0; i < n; ++i) {
    const bool first = admission.Admit(i * 0x9e3779b97f4a7c15ull, i / 7);
    EXPECT_EQ(again.Admit(i * 0x9e3779b97f4a7c15ull, i / 7), first) << i;
    admitted += first;
  }
  const double sigma = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(admitted, n * p, 5 * sigma);
  EXPECT_EQ(admission.Stats().sightings, static_cast<uint64_t>(n));
  EXPECT_EQ(admission.Stats().admitted, static_cast<uint64_t>(admitted));
  EXPECT_EQ(admission.Stats().bytes, 0u);
}

TEST(FeatureAdmissionTest, BloomAdmitsAtTheMinCountthSighting) {
  for (uint32_t min_count : {1u, 2u, 3u, 5u}) {
    FeatureAdmission admission(Bloom(min_count));
    for (uint64_t key = 1; key <= 200; ++key) {
      for (uint32_t sighting = 1; sighting < min_count; ++sighting) {
        EXPECT_FALSE(admission.Admit(key * 7919, 0)) << "key " << key << " sighting " << sighting;
      }
      EXPECT_TRUE(admission.Admit(key * 7919, 0)) << "key " << key;
    }
    EXPECT_EQ(admission.Stats().admitted, 200u);
    EXPECT_EQ(admission.Stats().bytes, 2u << 16);
  }
}

TEST(FeatureAdmissionTest, BloomForgetsAfterTwoGenerations) {
  // Key 42 is counted in the first generation; 99 other sightings fill it
  // and it becomes the old one. Seen again then, 42 is admitted.
  FeatureAdmission remembered(Bloom(2, 1 << 16, 100));
  EXPECT_FALSE(remembered.Admit(42, 0));
  for (uint64_t key = 1000; key < 1099; ++key) EXPECT_FALSE(remembered.Admit(key * 7919, 0));
  EXPECT_TRUE(remembered.Admit(42, 0));
  // 100 more fill the second generation, which clears the first (where 42
  // was counted): its next sighting counts as its first.
  FeatureAdmission forgotten(Bloom(2, 1 << 16, 100));
  EXPECT_FALSE(forgotten.Admit(42, 0));
  for (uint64_t key = 1000; key < 1199; ++key) EXPECT_FALSE(forgotten.Admit(key * 7919, 0));
  EXPECT_FALSE(forgotten.Admit(42, 0));
  EXPECT_TRUE(forgotten.Admit(42, 0));
}

TEST(FeatureAdmissionTest, EncodeDecodeContinuesWhereItWas) {
  FeatureAdmission admission(Bloom(3));
  for (uint64_t key = 0; key < 500; ++key) admission.Admit(key % 250, 0);
  auto decoded = FeatureAdmission::Decode(Bloom(3), admission.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Encode(), admission.Encode());
  for (uint64_t key = 0; key < 300; ++key) {
    EXPECT_EQ((*decoded)->Admit(key, 0), admission.Admit(key, 0)) << key;
  }
  EXPECT_EQ((*decoded)->Stats().admitted, admission.Stats().admitted);
}

TEST(FeatureAdmissionTest, DecodeRefusesDamageAndOtherOptions) {
  FeatureAdmission admission(Bloom(2, 64));
  admission.Admit(1, 0);
  const std::string bytes = admission.Encode();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x01;
    EXPECT_EQ(FeatureAdmission::Decode(Bloom(2, 64), flipped).status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(FeatureAdmission::Decode(Bloom(2, 64), bytes.substr(0, n)).ok()) << n;
  }
  EXPECT_EQ(FeatureAdmission::Decode(Bloom(2, 128), bytes).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FeatureAdmission::Decode({.policy = Policy::kPoisson, .probability = 0.5}, bytes)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(FeatureAdmissionTest, ValidationNamesTheFieldAndTheLimit) {
  const auto message = [](const AdmissionOptions& options) {
    return std::string(ValidateAdmissionOptions(options, "admission").message());
  };
  EXPECT_TRUE(ValidateAdmissionOptions({}, "admission").ok());
  EXPECT_TRUE(ValidateAdmissionOptions(Bloom(2), "admission").ok());
  for (double p : {0.0, -0.1, 1.5, std::nan("")}) {
    EXPECT_TRUE(absl::StrContains(message({.policy = Policy::kPoisson, .probability = p}),
                                  "admission.probability"))
        << p;
  }
  EXPECT_TRUE(absl::StrContains(message(Bloom(0)), "admission.min_count"));
  EXPECT_TRUE(absl::StrContains(message(Bloom(256)), "[1, 255]"));
  EXPECT_TRUE(absl::StrContains(message(Bloom(2, 1000)), "admission.counters"));
  EXPECT_TRUE(absl::StrContains(message(Bloom(2, 32)), "power of 2"));
  EXPECT_TRUE(absl::StrContains(message(Bloom(2, 1 << 10, 0)), "admission.generation_sightings"));
}

}  // namespace
}  // namespace clickd
