#include "core/optim/numeric_bounds.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/model/model_config.h"
#include "core/optim/optimizer_config.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NumericBounds, InputsAreRefusedBeyondTheirLimitWithFieldAndLimit) {
  EXPECT_TRUE(CheckImportance(kMaxImportance, "w").ok());
  EXPECT_TRUE(CheckImportance(0, "w").ok());
  absl::Status s = CheckImportance(1e20, "examples[3].importance");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[3].importance is 1e+20; the limit is 10000");
  EXPECT_EQ(CheckImportance(-1, "i").message(), "i is -1; must be finite and >= 0");
  EXPECT_EQ(CheckImportance(kInf, "i").message(), "i is inf; must be finite and >= 0");

  EXPECT_TRUE(CheckFeatureValue(-kMaxFeatureValue, "v").ok());
  EXPECT_EQ(CheckFeatureValue(1e20, "f.value").message(),
            "f.value is 1e+20; the limit is 1e+06 in absolute value");
  EXPECT_EQ(CheckFeatureValue(std::nan(""), "f.value").message(), "f.value is nan; must be finite");
  EXPECT_TRUE(CheckDenseValue(kMaxDenseValue, "d").ok());
  EXPECT_EQ(CheckDenseValue(-2e6, "d[0]").message(),
            "d[0] is -2e+06; the limit is 1e+06 in absolute value");
}

TEST(NumericBounds, SquaredLossLabelsAreBounded) {
  EXPECT_TRUE(CheckBoundedLabel(LossType::kSquared, -kMaxSquaredLabel, "l").ok());
  const absl::Status s = CheckBoundedLabel(LossType::kSquared, 1e20, "examples[0].label");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "examples[0].label is 1e+20; the limit under squared loss is 1e+06 in absolute value");
  // The other losses keep their domains.
  EXPECT_TRUE(CheckBoundedLabel(LossType::kLogistic, 1, "l").ok());
  EXPECT_FALSE(CheckBoundedLabel(LossType::kHinge, 2, "l").ok());
}

TEST(NumericBounds, ClampsLeaveOrdinaryValuesBitIdentical) {
  for (double g : {0.0, -0.0, 1e-300, -3.5, 1e12, -kMaxCoordinateGradient}) {
    EXPECT_EQ(std::signbit(ClampGradient(g)), std::signbit(g));
    EXPECT_EQ(ClampGradient(g), g);
  }
  EXPECT_EQ(ClampGradient(1e300), kMaxCoordinateGradient);
  EXPECT_EQ(ClampGradient(-kInf), -kMaxCoordinateGradient);
  struct TwoFloats {
    float a, b;
  } s{-0.0f, 3.25f};
  SaturateState(s);
  EXPECT_TRUE(std::signbit(s.a));
  EXPECT_EQ(s.b, 3.25f);
  s = {std::numeric_limits<float>::infinity(), -1e38f};
  SaturateState(s);
  EXPECT_EQ(s.a, kMaxStateValue);
  EXPECT_EQ(s.b, -kMaxStateValue);
}

// One hyperparameter set out of range: the error names it and its range,
// whichever optimizer is selected.
struct ParamCase {
  const char* field;
  void (*set)(OptimizerConfig*, double);
  double bad;
  const char* message;
};

TEST(NumericBounds, EveryOptimizerHyperparameterIsBoundedSelectedOrNot) {
  const ParamCase cases[] = {
      {"ftrl.alpha", [](OptimizerConfig* c, double v) { c->ftrl.alpha = v; }, 1e308,
       "ftrl.alpha is 1e+308; must be in [1e-09, 1000]"},
      {"ftrl.beta", [](OptimizerConfig* c, double v) { c->ftrl.beta = v; }, 0,
       "ftrl.beta is 0; must be in [1e-06, 1e+06]"},
      {"ftrl.lambda1", [](OptimizerConfig* c, double v) { c->ftrl.lambda1 = v; }, 1e7,
       "ftrl.lambda1 is 1e+07; must be in [0, 1e+06]"},
      {"ftrl.lambda2", [](OptimizerConfig* c, double v) { c->ftrl.lambda2 = v; }, 1e7,
       "ftrl.lambda2 is 1e+07; must be in [0, 1e+06]"},
      {"adagrad.eta", [](OptimizerConfig* c, double v) { c->adagrad.eta = v; }, 1e-308,
       "adagrad.eta is 1e-308; must be in [1e-09, 1000]"},
      {"adagrad.delta", [](OptimizerConfig* c, double v) { c->adagrad.delta = v; }, 0,
       "adagrad.delta is 0; must be in [1e-06, 1e+06]"},
      {"adagrad.lambda", [](OptimizerConfig* c, double v) { c->adagrad.lambda = v; }, 1e9,
       "adagrad.lambda is 1e+09; must be in [0, 1e+06]"},
      {"pc_ogd.radius", [](OptimizerConfig* c, double v) { c->pc_ogd.radius = v; }, 1e30,
       "pc_ogd.radius is 1e+30; must be in [1e-06, 1e+06]"},
      {"pc_ogd.scale", [](OptimizerConfig* c, double v) { c->pc_ogd.scale = v; }, 1e4,
       "pc_ogd.scale is 10000; must be in [1e-09, 1000]"},
      {"global_ogd.radius", [](OptimizerConfig* c, double v) { c->global_ogd.radius = v; }, 1e-300,
       "global_ogd.radius is 1e-300; must be in [1e-06, 1e+06]"},
      {"global_ogd.scale", [](OptimizerConfig* c, double v) { c->global_ogd.scale = v; }, 1e300,
       "global_ogd.scale is 1e+300; must be in [1e-09, 1000]"},
      {"sgd.eta", [](OptimizerConfig* c, double v) { c->sgd.eta = v; }, 1e300,
       "sgd.eta is 1e+300; must be in [1e-09, 1000]"},
      {"pa.c", [](OptimizerConfig* c, double v) { c->pa.c = v; }, 1e100,
       "pa.c is 1e+100; must be in [1e-09, 1e+06]"},
      {"cw.a", [](OptimizerConfig* c, double v) { c->cw.a = v; }, 4.9e-324,
       "cw.a is 4.94066e-324; must be in [1e-06, 1e+06]"},
      {"metagrad_diag.diameter",
       [](OptimizerConfig* c, double v) { c->metagrad_diag.diameter = v; }, 1e7,
       "metagrad_diag.diameter is 1e+07; must be in [1e-06, 1e+06]"},
      {"metagrad_diag.gradient_bound",
       [](OptimizerConfig* c, double v) { c->metagrad_diag.gradient_bound = v; }, 1e-7,
       "metagrad_diag.gradient_bound is 1e-07; must be in [1e-06, 1e+06]"},
  };
  for (const ParamCase& p : cases) {
    for (OptimizerType type : {OptimizerType::kFtrl, OptimizerType::kSgd, OptimizerType::kCw,
                               OptimizerType::kMetaGradDiag, OptimizerType::kDense}) {
      OptimizerConfig c;
      c.type = type;
      EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
      p.set(&c, p.bad);
      const absl::Status s = ValidateOptimizerConfig(c);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << p.field;
      EXPECT_EQ(s.message(), p.message) << std::string(OptimizerTypeName(type));
    }
  }
}

TEST(NumericBounds, UnusedDenseLearnerParametersAreBounded) {
  ModelConfig m;  // ftrl, no dense namespaces: the dense learner is unused
  EXPECT_TRUE(ValidateModelConfig(m).ok());
  m.dense_optimizer.eta = 1e300;
  EXPECT_EQ(ValidateModelConfig(m).message(),
            "dense_optimizer.eta is 1e+300; must be in [1e-09, 1000]");
  m.dense_optimizer.eta = 0.1;
  m.dense_optimizer.weight_power = std::nan("");
  EXPECT_EQ(ValidateModelConfig(m).message(),
            "dense_optimizer.weight_power is nan; must be in [0, 1]");
  m.dense_optimizer.weight_power = 0.5;
  m.dense_optimizer.gradient_bound = 1e-308;
  EXPECT_EQ(ValidateModelConfig(m).message(),
            "dense_optimizer.gradient_bound is 1e-308; must be in [1e-06, 1e+06]");
}

}  // namespace
}  // namespace clickd
