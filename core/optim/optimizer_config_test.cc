#include "core/optim/optimizer_config.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/model/model_config.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// Defaults are part of the API: changing one changes every model created
// without it. Pin them here.
TEST(OptimizerDefaults, Pinned) {
  const OptimizerConfig c;
  EXPECT_EQ(c.type, OptimizerType::kFtrl);
  EXPECT_EQ(c.ftrl.alpha, 0.1);
  EXPECT_EQ(c.ftrl.beta, 1.0);
  EXPECT_EQ(c.ftrl.lambda1, 0.0);
  EXPECT_EQ(c.ftrl.lambda2, 0.0);
  EXPECT_FALSE(c.ftrl.lambda1_times_t);
  EXPECT_EQ(c.ftrl.decay, 1.0);
  EXPECT_EQ(c.adagrad.eta, 0.1);
  EXPECT_EQ(c.adagrad.delta, 1.0);
  EXPECT_EQ(c.adagrad.lambda, 0.0);
  // Click data (docs/optimizers.md, "Defaults on click data"): seed 001
  // section 5.2's box [-1, 1]^n, and a first step of 2R/80 per coordinate.
  // The paper's text setting (5.1: R = 100, 0.6/R and 0.2/R) is passed
  // explicitly by bench/seed001.
  EXPECT_EQ(c.pc_ogd.radius, 1.0);
  EXPECT_EQ(c.pc_ogd.scale, 1.0 / 80);
  EXPECT_EQ(c.global_ogd.radius, 1.0);
  EXPECT_EQ(c.global_ogd.scale, 1.0 / 80);
  EXPECT_EQ(c.sgd.eta, 0.3);
  EXPECT_EQ(c.pa.c, 1.0);
  // Seed 001 section 5.1: CW with phi = 1 (eta = Phi(1)) and a = 1.
  EXPECT_DOUBLE_EQ(c.cw.eta, 0.5 * std::erfc(-1.0 / std::sqrt(2.0)));
  EXPECT_EQ(c.cw.a, 1.0);
  // D = 1 per coordinate; G = sqrt(40), the whole gradient's norm for 40
  // binary features.
  EXPECT_EQ(c.metagrad_diag.diameter, 1.0);
  EXPECT_EQ(c.metagrad_diag.gradient_bound, std::sqrt(40.0));
  const ModelConfig m;
  EXPECT_EQ(m.name, "default");
  EXPECT_EQ(m.loss, LossType::kLogistic);
  EXPECT_EQ(m.num_shards, 16);
  EXPECT_EQ(m.hashing.seed, 0u);
  EXPECT_EQ(m.hashing.bits, 0);
  EXPECT_TRUE(m.hashing.bias);
}

TEST(OptimizerType, NamesRoundTrip) {
  for (const char* name : {"ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd", "pa",
                           "cw", "metagrad_diag"}) {
    auto type = ParseOptimizerType(name);
    ASSERT_TRUE(type.ok()) << name;
    EXPECT_EQ(OptimizerTypeName(*type), name);
  }
  EXPECT_EQ(ParseOptimizerType("adam").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseOptimizerType("adam").status().message(),
            "optimizer \"adam\" is unknown; expected ftrl, adagrad, adagrad_da, pc_ogd, "
            "global_ogd, sgd, pa, cw or metagrad_diag");
  // Snapshots store the number: new types go at the end.
  EXPECT_EQ(static_cast<int>(OptimizerType::kCw), 7);
  EXPECT_EQ(static_cast<int>(OptimizerType::kMetaGradDiag), 8);
}

TEST(OptimizerConfig, ValidationNamesFieldAndLimit) {
  OptimizerConfig c;
  c.type = OptimizerType::kPcOgd;
  c.pc_ogd.radius = 0;
  const absl::Status s = ValidateOptimizerConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("pc_ogd.radius is 0; must be finite and > 0"), std::string::npos);
  c = OptimizerConfig{};
  c.ftrl.lambda1 = -0.5;
  EXPECT_NE(ValidateOptimizerConfig(c).message().find("ftrl.lambda1"), std::string::npos);
  for (double bad : {0.0, -0.1, 1.0000001, std::nan(""), HUGE_VAL}) {
    c = OptimizerConfig{};
    c.ftrl.decay = bad;
    EXPECT_NE(ValidateOptimizerConfig(c).message().find("ftrl.decay is "), std::string::npos)
        << bad;
    EXPECT_NE(ValidateOptimizerConfig(c).message().find("must be in (0, 1]"), std::string::npos);
  }
  c = OptimizerConfig{};
  c.ftrl.decay = 0.999;
  EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
}

TEST(OptimizerConfig, MetaGradDiagParametersNameFieldAndLimit) {
  OptimizerConfig c;
  c.type = OptimizerType::kMetaGradDiag;
  EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
  c.metagrad_diag.diameter = 0;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "metagrad_diag.diameter is 0; must be finite and > 0");
  c.metagrad_diag.diameter = 4;
  c.metagrad_diag.gradient_bound = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "metagrad_diag.gradient_bound is inf; must be finite and > 0");
  // Every optimizer's parameters are checked, selected or not.
  c.type = OptimizerType::kFtrl;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "metagrad_diag.gradient_bound is inf; must be finite and > 0");
  // Not a classifier: it minimises any of the losses.
  ModelConfig m;
  m.optimizer.type = OptimizerType::kMetaGradDiag;
  for (LossType loss : {LossType::kLogistic, LossType::kSquared, LossType::kHinge}) {
    m.loss = loss;
    EXPECT_TRUE(ValidateModelConfig(m).ok()) << std::string(LossTypeName(loss));
  }
}

TEST(OptimizerConfig, ClassifierParametersNameFieldAndLimit) {
  OptimizerConfig c;
  c.type = OptimizerType::kPa;
  EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
  c.pa.c = 0;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(), "pa.c is 0; must be finite and > 0");
  c = OptimizerConfig{};
  c.type = OptimizerType::kCw;
  EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
  // phi = Phi^{-1}(eta) must be positive and finite.
  for (double eta : {0.5, 1.0, 0.2, std::nan("")}) {
    c.cw.eta = eta;
    EXPECT_EQ(ValidateOptimizerConfig(c).code(), absl::StatusCode::kInvalidArgument) << eta;
  }
  c.cw.eta = 0.5;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(), "cw.eta is 0.5; must be in (0.5, 1)");
  c.cw.eta = 0.9;
  c.cw.a = -1;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(), "cw.a is -1; must be finite and > 0");
  // Every optimizer's parameters are checked, selected or not.
  c.type = OptimizerType::kPa;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(), "cw.a is -1; must be finite and > 0");
}

// PA and CW predict with the margin and take labels -1/+1: only hinge loss.
TEST(OptimizerConfig, ClassifiersTakeHingeLossOnly) {
  for (OptimizerType type : {OptimizerType::kPa, OptimizerType::kCw}) {
    ModelConfig m;
    m.optimizer.type = type;
    m.loss = LossType::kHinge;
    EXPECT_TRUE(ValidateModelConfig(m).ok()) << std::string(OptimizerTypeName(type));
    for (LossType loss : {LossType::kLogistic, LossType::kSquared}) {
      m.loss = loss;
      const absl::Status s = ValidateModelConfig(m);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(s.message(),
                absl::StrCat("loss is ", std::string(LossTypeName(loss)), "; optimizer ",
                             std::string(OptimizerTypeName(type)),
                             " is a binary classifier and takes loss hinge (labels -1/+1, "
                             "prediction the margin)"));
    }
  }
  EXPECT_TRUE(IsBinaryClassifier(OptimizerType::kPa));
  EXPECT_FALSE(IsBinaryClassifier(OptimizerType::kPcOgd));
}

}  // namespace
}  // namespace clickd
