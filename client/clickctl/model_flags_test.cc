#include "client/clickctl/model_flags.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ModelFlags, DefaultsAreTheDefaultModel) {
  auto config = BuildModelConfig(ModelFlagValues{});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.type, OptimizerType::kFtrl);
  EXPECT_EQ(config->optimizer.ftrl.alpha, FtrlParams{}.alpha);
  EXPECT_TRUE(config->hashing.bias);
}

TEST(ModelFlags, HyperparametersGoToTheSelectedOptimizer) {
  ModelFlagValues v;
  v.optimizer = "pc_ogd";
  v.loss = "hinge";
  v.radius = 5;
  v.scale = 0.1;
  v.interactions = "user:ad,a:b:c";
  v.bits = 20;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.pc_ogd.radius, 5);
  EXPECT_EQ(config->optimizer.pc_ogd.scale, 0.1);
  EXPECT_EQ(config->loss, LossType::kHinge);
  ASSERT_EQ(config->hashing.interactions.size(), 2u);
  EXPECT_EQ(config->hashing.interactions[1], (std::vector<std::string>{"a", "b", "c"}));
  v.optimizer = "sgd";
  v.radius.reset();
  v.scale.reset();
  v.eta = 0.5;
  EXPECT_EQ(BuildModelConfig(v)->optimizer.sgd.eta, 0.5);
}

TEST(ModelFlags, FlagForAnotherOptimizerIsAnError) {
  ModelFlagValues v;
  v.optimizer = "ftrl";
  v.eta = 0.1;
  const auto status = BuildModelConfig(v).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--eta does not apply to --optimizer=ftrl"), std::string::npos);
}

TEST(ModelFlags, BadValuesNameTheField) {
  ModelFlagValues v;
  v.alpha = 0;
  EXPECT_NE(BuildModelConfig(v).status().message().find("ftrl.alpha"), std::string::npos);
  v = ModelFlagValues{};
  v.interactions = "user";
  EXPECT_NE(BuildModelConfig(v).status().message().find("--interactions"), std::string::npos);
  v = ModelFlagValues{};
  v.optimizer = "adam";
  EXPECT_FALSE(BuildModelConfig(v).ok());
}

}  // namespace
}  // namespace clickd
