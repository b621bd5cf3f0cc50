#include "server/server_config.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ServerConfig, ParsesModels) {
  auto models = ParseServerConfig(
      R"({"models": [{"name": "ctr", "optimizer": "adagrad", "adagrad": {"eta": 0.2}},
                     {"name": "cvr", "hashing": {"bits": 20,
                      "interactions": [{"namespaces": ["user", "ad"]}]}}]})",
      "models.json");
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].optimizer.adagrad.eta, 0.2);
  EXPECT_EQ((*models)[1].hashing.bits, 20);
  EXPECT_EQ((*models)[1].hashing.interactions[0][1], "ad");
}

TEST(ServerConfig, ErrorsNameFileAndField) {
  auto s = ParseServerConfig(R"({"models": [{"name": "a", "optimizr": "sgd"}]})", "m.json");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("m.json"), std::string::npos);
  s = ParseServerConfig(R"({"models": [{"name": "a"}, {"name": "a"}]})", "m.json");
  EXPECT_NE(s.status().message().find("declared twice"), std::string::npos);
  s = ParseServerConfig(R"({"models": [{"name": "a", "ftrl": {"alpha": -1}}]})", "m.json");
  EXPECT_NE(s.status().message().find("m.json: models[0].config.ftrl.alpha"), std::string::npos)
      << s.status();
  EXPECT_EQ(LoadServerConfig("/nonexistent.json").status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerConfig, DefaultModelIsFtrlLogistic) {
  const ModelConfig c = DefaultModelConfig();
  EXPECT_EQ(c.name, "default");
  EXPECT_EQ(c.optimizer.type, OptimizerType::kFtrl);
  EXPECT_EQ(c.loss, LossType::kLogistic);
}

}  // namespace
}  // namespace clickd
