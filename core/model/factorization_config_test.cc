// ValidateFactorizationConfig through ValidateModelConfig: every refusal
// names the field and the limit.
#include <string>

#include "core/model/model.h"
#include "core/model/model_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using ::testing::HasSubstr;

ModelConfig FfmConfig() {
  ModelConfig config;
  config.factorization.kind = FactorizationConfig::Kind::kFfm;
  config.factorization.fields = {"user", "ad"};
  return config;
}

void ExpectRefused(const ModelConfig& config, const std::string& names) {
  const absl::Status s = ValidateModelConfig(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(names));
}

TEST(FactorizationConfig, TheDefaultsAreValid) {
  EXPECT_TRUE(ValidateModelConfig(ModelConfig{}).ok());
  EXPECT_TRUE(ValidateModelConfig(FfmConfig()).ok());
  ModelConfig fm = FfmConfig();
  fm.factorization.kind = FactorizationConfig::Kind::kFm;
  fm.factorization.dim = kMaxFactorDim;
  EXPECT_TRUE(ValidateModelConfig(fm).ok());
}

TEST(FactorizationConfig, RefusesADimOutOfRange) {
  ModelConfig config = FfmConfig();
  config.factorization.dim = 0;
  ExpectRefused(config, "factorization.dim is 0; must be in 1..64");
  config.factorization.dim = 1000000;
  ExpectRefused(config, "factorization.dim is 1000000; must be in 1..64");
}

TEST(FactorizationConfig, RefusesFieldsThatAreNoSparseNamespace) {
  ModelConfig config = FfmConfig();
  config.factorization.fields.clear();
  ExpectRefused(config, "factorization.fields has 0 namespaces; must have 1..16");
  config.factorization.fields.assign(17, "x");
  ExpectRefused(config, "must have 1..16");
  config.factorization.fields = {"user", "user"};
  ExpectRefused(config, "factorization.fields[1] \"user\" is named twice");
  config.factorization.fields = {"user", ""};
  ExpectRefused(config, "factorization.fields[1] is \"\"");
  config.factorization.fields = {"user", "emb"};
  config.dense_namespaces = {{"emb", 16}};
  ExpectRefused(config, "factorization.fields[1] \"emb\" is unknown as a sparse namespace");
}

TEST(FactorizationConfig, RefusesAnOptimizerWithoutALossGradient) {
  ModelConfig config = FfmConfig();
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPa;
  ExpectRefused(config, "factorization needs an optimizer that steps on the loss gradient");
  config = FfmConfig();
  ASSERT_TRUE(SetOptimizerName("ada_fd", &config).ok());
  config.hashing.bits = 10;
  ExpectRefused(config, "optimizer is ada_fd");
}

TEST(FactorizationConfig, RefusesHyperparametersOutOfRange) {
  ModelConfig config = FfmConfig();
  config.factorization.eta = 0;
  ExpectRefused(config, "factorization.eta");
  config = FfmConfig();
  config.factorization.l2 = -1;
  ExpectRefused(config, "factorization.l2");
  config = FfmConfig();
  config.factorization.init_scale = 2;
  ExpectRefused(config, "factorization.init_scale");
}

TEST(FactorizationConfig, RefusesSettingsWithoutAKind) {
  ModelConfig config;
  config.factorization.fields = {"user"};
  ExpectRefused(config, "factorization has settings but kind none");
}

TEST(FactorizationConfig, ParsesKindNames) {
  FactorizationConfig::Kind kind;
  ASSERT_TRUE(ParseFactorizationKind("ffm", &kind).ok());
  EXPECT_EQ(kind, FactorizationConfig::Kind::kFfm);
  const absl::Status s = ParseFactorizationKind("fwfm", &kind);
  EXPECT_THAT(std::string(s.message()), HasSubstr("one of: none, fm, ffm"));
}

// A variant may have its own factorization, validated as the model's
// (named by the variant), and every factorized member factors the same
// fields, since the model hashes each example once.
TEST(FactorizationConfig, VariantsFactorTheSameFields) {
  ModelConfig config;
  config.variants.push_back({"ffm", {}});
  config.variants[0].factorization.kind = FactorizationConfig::Kind::kFfm;
  config.variants[0].factorization.fields = {"user", "ad"};
  EXPECT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config);
  EXPECT_EQ(FactorizationFields(config), (std::vector<std::string>{"user", "ad"}));
  config.variants.push_back({"fm", {}});
  config.variants[1].factorization.kind = FactorizationConfig::Kind::kFm;
  config.variants[1].factorization.fields = {"ad", "user"};
  absl::Status s = ValidateModelConfig(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("variants[1].factorization.fields are ad,user"), std::string::npos)
      << s;
  config.variants[1].factorization.fields = {"user", "ad"};
  config.variants[1].factorization.dim = 0;
  s = ValidateModelConfig(config);
  EXPECT_NE(s.message().find("variants[1].factorization.dim is 0"), std::string::npos) << s;
  config.variants[1].factorization.dim = 4;
  config.variants[1].optimizer.type = OptimizerType::kPa;
  config.loss = LossType::kHinge;
  s = ValidateModelConfig(config);
  EXPECT_NE(s.message().find("variants[1].factorization needs an optimizer"), std::string::npos)
      << s;
  // The model's own factorization sets the fields the variants must match.
  config.variants[1].optimizer.type = OptimizerType::kFtrl;
  config.loss = LossType::kLogistic;
  config.factorization.kind = FactorizationConfig::Kind::kFm;
  config.factorization.fields = {"site"};
  s = ValidateModelConfig(config);
  EXPECT_NE(s.message().find("variants[0].factorization.fields are user,ad"), std::string::npos)
      << s;
  EXPECT_EQ(FactorRowBytesPerFeature(config),
            (8u + 2 * 4 * 4) + (8u + 2 * 8 * 4) + (8u + 2 * 4 * 4));
}

}  // namespace
}  // namespace clickd
