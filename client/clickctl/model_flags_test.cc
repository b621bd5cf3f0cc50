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

TEST(ModelFlags, AdmissionProbability) {
  ModelFlagValues v;
  v.admission_probability = 0.1;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->admission.policy, AdmissionOptions::Policy::kPoisson);
  EXPECT_EQ(config->admission.probability, 0.1);
  v.admission_probability = 0;
  EXPECT_NE(BuildModelConfig(v).status().message().find("admission.probability"),
            std::string::npos);
}

TEST(ModelFlags, AdmissionBloom) {
  ModelFlagValues v;
  v.admission = "bloom";
  v.admission_min_count = 3;
  v.admission_counters = 4096;
  v.admission_generation_sightings = 500;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->admission.policy, AdmissionOptions::Policy::kBloom);
  EXPECT_EQ(config->admission.min_count, 3u);
  EXPECT_EQ(config->admission.counters, 4096u);
  EXPECT_EQ(config->admission.generation_sightings, 500u);
  v.admission_counters = 1000;
  EXPECT_NE(BuildModelConfig(v).status().message().find("admission.counters is 1000"),
            std::string::npos);
  v.admission_counters = 4096;
  v.admission_min_count = 256;
  EXPECT_EQ(BuildModelConfig(v).status().message(),
            "--admission_min_count is 256; must be in 1..255");
  v.admission_min_count = 2;
  v.admission_probability = 0.5;
  EXPECT_EQ(BuildModelConfig(v).status().message(),
            "--admission=bloom and --admission_probability are two policies; set one");
  v.admission_probability = 1;
  v.admission = "sometimes";
  EXPECT_EQ(BuildModelConfig(v).status().message(),
            "--admission is \"sometimes\"; expected all, poisson or bloom");
  v.admission = "";
  v.variants = "few:admission=bloom,admission_min_count=4";
  config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->variants.size(), 1u);
  EXPECT_EQ(config->variants[0].admission.policy, AdmissionOptions::Policy::kBloom);
  EXPECT_EQ(config->variants[0].admission.min_count, 4u);
  EXPECT_EQ(config->admission.policy, AdmissionOptions::Policy::kAll);
}

TEST(ModelFlags, MemoryMaxBytes) {
  ModelFlagValues v;
  v.memory_max_bytes = 1 << 20;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory.max_bytes, 1u << 20);
  v.memory_max_bytes = 100;
  EXPECT_NE(BuildModelConfig(v).status().message().find("memory.max_bytes is 100"),
            std::string::npos);
}

TEST(ModelFlags, MemoryTtlRounds) {
  ModelFlagValues v;
  v.memory_ttl_rounds = 100000;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory.ttl_rounds, 100000u);
  v.memory_ttl_rounds = 10;
  EXPECT_NE(BuildModelConfig(v).status().message().find("memory.ttl_rounds is 10"),
            std::string::npos);
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

TEST(ModelFlags, ClassifierFlags) {
  ModelFlagValues v;
  v.optimizer = "pa";
  v.loss = "hinge";
  v.pa_c = 0.5;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.type, OptimizerType::kPa);
  EXPECT_EQ(config->optimizer.pa.c, 0.5);
  v.optimizer = "cw";
  v.pa_c.reset();
  v.cw_eta = 0.95;
  v.cw_a = 2;
  config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.cw.eta, 0.95);
  EXPECT_EQ(config->optimizer.cw.a, 2);
  v.pa_c = 1;  // a pa flag with --optimizer=cw
  EXPECT_NE(BuildModelConfig(v).status().message().find("--pa_c does not apply to --optimizer=cw"),
            std::string::npos);
  v.pa_c.reset();
  v.cw_eta = 0.4;
  EXPECT_NE(BuildModelConfig(v).status().message().find("cw.eta is 0.4; must be in (0.5, 1)"),
            std::string::npos);
  // The default loss, logistic, is refused for a classifier.
  v = ModelFlagValues{};
  v.optimizer = "pa";
  EXPECT_NE(BuildModelConfig(v).status().message().find("takes loss hinge"), std::string::npos);
}

TEST(ModelFlags, MetaGradFlags) {
  ModelFlagValues v;
  v.optimizer = "metagrad_diag";
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.type, OptimizerType::kMetaGradDiag);
  EXPECT_EQ(config->optimizer.metagrad_diag.diameter, MetaGradDiagParams{}.diameter);
  EXPECT_EQ(config->optimizer.metagrad_diag.gradient_bound, MetaGradDiagParams{}.gradient_bound);
  v.metagrad_diameter = 3;
  v.metagrad_gradient_bound = 0.5;
  config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->optimizer.metagrad_diag.diameter, 3);
  EXPECT_EQ(config->optimizer.metagrad_diag.gradient_bound, 0.5);
  v.metagrad_diameter = 0;
  EXPECT_NE(BuildModelConfig(v).status().message().find(
                "metagrad_diag.diameter is 0; must be finite and > 0"),
            std::string::npos);
  // The metagrad flags with another optimizer, and another's with metagrad_diag.
  v.metagrad_diameter.reset();
  v.optimizer = "ftrl";
  EXPECT_NE(BuildModelConfig(v).status().message().find(
                "--metagrad_gradient_bound does not apply to --optimizer=ftrl"),
            std::string::npos);
  v.metagrad_gradient_bound.reset();
  v.metagrad_diameter = 3;
  EXPECT_NE(BuildModelConfig(v).status().message().find(
                "--metagrad_diameter does not apply to --optimizer=ftrl"),
            std::string::npos);
  v = ModelFlagValues{};
  v.optimizer = "metagrad_diag";
  v.alpha = 0.1;
  EXPECT_NE(BuildModelConfig(v).status().message().find(
                "--alpha does not apply to --optimizer=metagrad_diag"),
            std::string::npos);
}

TEST(ModelFlags, Variants) {
  ModelFlagValues v;
  v.variants =
      "fast:alpha=0.3; ada:optimizer=adagrad,eta=0.05 ;drift:ftrl_decay=0.999;plain:"
      "admission_probability=0.25";
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->variants.size(), 4u);
  EXPECT_EQ(config->variants[0].name, "fast");
  EXPECT_EQ(config->variants[0].optimizer.ftrl.alpha, 0.3);
  EXPECT_EQ(config->variants[1].name, "ada");
  EXPECT_EQ(config->variants[1].optimizer.type, OptimizerType::kAdagrad);
  EXPECT_EQ(config->variants[1].optimizer.adagrad.eta, 0.05);
  EXPECT_EQ(config->variants[2].optimizer.ftrl.decay, 0.999);
  EXPECT_EQ(config->variants[3].optimizer.type, OptimizerType::kFtrl);
  EXPECT_EQ(config->variants[3].optimizer.ftrl.alpha, FtrlParams{}.alpha);
  EXPECT_EQ(config->variants[3].admission.policy, AdmissionOptions::Policy::kPoisson);
  EXPECT_EQ(config->variants[3].admission.probability, 0.25);
  EXPECT_EQ(config->variants[0].admission.policy, AdmissionOptions::Policy::kAll);

  auto error = [](std::string text) {
    ModelFlagValues v;
    v.variants = std::move(text);
    return std::string(BuildModelConfig(v).status().message());
  };
  EXPECT_EQ(error("ada:optimizer=adagrad,alpha=0.1"),
            "--variants \"ada\": --alpha does not apply to --optimizer=adagrad");
  EXPECT_EQ(error("x:alpha=fast"), "--variants \"x\": alpha=fast is not a number");
  EXPECT_EQ(error("x:speed=1"),
            "--variants \"x\": key \"speed\" is unknown; expected optimizer or a hyperparameter "
            "flag's name");
  EXPECT_EQ(error("x:alpha=-1"), "--variants \"x\": ftrl.alpha is -1; must be finite and > 0");
  EXPECT_EQ(error("x;x"), "variants[1].name \"x\" repeats variants[0]");
  EXPECT_EQ(error("pa:optimizer=pa"),
            "--variants \"pa\": loss is logistic; optimizer pa is a binary classifier and takes "
            "loss hinge (labels -1/+1, prediction the margin)");
}

TEST(ModelFlags, FlagForAnotherOptimizerIsAnError) {
  ModelFlagValues v;
  v.optimizer = "ftrl";
  v.eta = 0.1;
  const auto status = BuildModelConfig(v).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--eta does not apply to --optimizer=ftrl"), std::string::npos);
  v = ModelFlagValues{};
  v.optimizer = "adagrad";
  v.ftrl_decay = 0.99;
  EXPECT_NE(BuildModelConfig(v).status().message().find("--ftrl_decay does not apply"),
            std::string::npos);
}

TEST(ModelFlags, BadValuesNameTheField) {
  ModelFlagValues v;
  v.alpha = 0;
  EXPECT_NE(BuildModelConfig(v).status().message().find("ftrl.alpha"), std::string::npos);
  v = ModelFlagValues{};
  v.ftrl_decay = 1.5;
  EXPECT_NE(BuildModelConfig(v).status().message().find("ftrl.decay is 1.5; must be in (0, 1]"),
            std::string::npos);
  v.ftrl_decay = 0.999;
  ASSERT_TRUE(BuildModelConfig(v).ok());
  EXPECT_EQ(BuildModelConfig(v)->optimizer.ftrl.decay, 0.999);
  v = ModelFlagValues{};
  v.interactions = "user";
  EXPECT_NE(BuildModelConfig(v).status().message().find("--interactions"), std::string::npos);
  v = ModelFlagValues{};
  v.optimizer = "adam";
  EXPECT_FALSE(BuildModelConfig(v).ok());
}

TEST(ModelFlags, FeedbackLoop) {
  ModelFlagValues v;
  EXPECT_FALSE(BuildModelConfig(v)->feedback.enabled());
  v.feedback_ttl_seconds = 3600;
  v.feedback_max_buffer_bytes = 1 << 20;
  v.feedback_policy = "fake_negative_weighted";
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->feedback.ttl_seconds, 3600);
  EXPECT_EQ(config->feedback.max_buffer_bytes, 1u << 20);
  EXPECT_EQ(config->feedback.policy, FeedbackConfig::Policy::kFakeNegativeWeighted);
  v.feedback_max_buffer_bytes.reset();
  v.feedback_policy.clear();
  config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->feedback.max_buffer_bytes, FeedbackConfig{}.max_buffer_bytes);
  EXPECT_EQ(config->feedback.policy, FeedbackConfig::Policy::kWaitNegative);
}

TEST(ModelFlags, BadFeedbackValuesNameTheFlag) {
  const auto message = [](const ModelFlagValues& v) {
    return std::string(BuildModelConfig(v).status().message());
  };
  ModelFlagValues v;
  v.feedback_ttl_seconds = -1;
  EXPECT_EQ(message(v).rfind("--feedback_ttl_seconds is -1; must be in 0..2592000", 0), 0u)
      << message(v);
  v.feedback_ttl_seconds = 2592001;
  EXPECT_EQ(message(v).rfind("--feedback_ttl_seconds is 2592001", 0), 0u) << message(v);
  v.feedback_ttl_seconds = 60;
  v.feedback_max_buffer_bytes = 1023;
  EXPECT_EQ(message(v).rfind("--feedback_max_buffer_bytes is 1023; must be in 1024..", 0), 0u)
      << message(v);
  v.feedback_max_buffer_bytes.reset();
  v.feedback_policy = "wait_forever";
  EXPECT_EQ(message(v).rfind("--feedback_policy \"wait_forever\" is unknown; one of", 0), 0u)
      << message(v);
  v.feedback_policy = "wait_drop";
  v.loss = "squared";
  EXPECT_EQ(message(v).rfind("--feedback_ttl_seconds needs --loss=logistic", 0), 0u) << message(v);
  v = ModelFlagValues{};
  v.feedback_policy = "wait_drop";
  EXPECT_EQ(message(v), "--feedback_policy needs --feedback_ttl_seconds > 0");
  v = ModelFlagValues{};
  v.feedback_max_buffer_bytes = 4096;
  EXPECT_EQ(message(v), "--feedback_max_buffer_bytes needs --feedback_ttl_seconds > 0");
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

TEST(ModelFlags, Factorization) {
  ModelFlagValues v;
  EXPECT_FALSE(BuildModelConfig(v)->factorization.enabled());
  v.factorization = "ffm";
  v.factor_fields = "user,ad,site";
  v.factor_dim = 8;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->factorization.kind, FactorizationConfig::Kind::kFfm);
  EXPECT_EQ(config->factorization.dim, 8);
  EXPECT_EQ(config->factorization.fields, (std::vector<std::string>{"user", "ad", "site"}));
  v.factor_dim = 0;
  EXPECT_NE(BuildModelConfig(v).status().message().find("factorization.dim is 0"),
            std::string::npos);
  v.factor_dim.reset();
  EXPECT_EQ(BuildModelConfig(v)->factorization.dim, 4);
  EXPECT_TRUE(BuildModelConfig(v)->factorization.normalize);
  v.factor_normalize = false;
  EXPECT_FALSE(BuildModelConfig(v)->factorization.normalize);
  v.factor_normalize.reset();
  v.factor_eta = 0.05;
  v.factor_l2 = 0;
  EXPECT_EQ(BuildModelConfig(v)->factorization.eta, 0.05);
  EXPECT_EQ(BuildModelConfig(v)->factorization.l2, 0.0);
  v.factor_eta = -1;
  EXPECT_NE(BuildModelConfig(v).status().message().find("factorization.eta"), std::string::npos);
  v.factor_eta.reset();
  v.factor_l2.reset();
  v.factorization = "fwfm";
  EXPECT_NE(BuildModelConfig(v).status().message().find("--factorization=fwfm"), std::string::npos);
  v = ModelFlagValues{};
  v.factor_dim = 4;
  EXPECT_EQ(BuildModelConfig(v).status().message(), "--factor_dim needs --factorization");
  v = ModelFlagValues{};
  v.factor_fields = "user";
  EXPECT_EQ(BuildModelConfig(v).status().message(), "--factor_fields needs --factorization");
  v = ModelFlagValues{};
  v.factor_normalize = true;
  EXPECT_EQ(BuildModelConfig(v).status().message(), "--factor_normalize needs --factorization");
  // A linear model with an FFM variant over --factor_fields.
  v = ModelFlagValues{};
  v.factor_fields = "user,ad";
  v.variants = "ffm:factorization=ffm,factor_dim=8;plain:alpha=0.2";
  auto with_variant = BuildModelConfig(v);
  ASSERT_TRUE(with_variant.ok()) << with_variant.status();
  EXPECT_FALSE(with_variant->factorization.enabled());
  ASSERT_EQ(with_variant->variants.size(), 2u);
  EXPECT_EQ(with_variant->variants[0].factorization.kind, FactorizationConfig::Kind::kFfm);
  EXPECT_EQ(with_variant->variants[0].factorization.dim, 8);
  EXPECT_EQ(with_variant->variants[0].factorization.fields,
            (std::vector<std::string>{"user", "ad"}));
  EXPECT_FALSE(with_variant->variants[1].factorization.enabled());
  v.variants = "ffm:factorization=ffm,factor_dim=x";
  EXPECT_NE(BuildModelConfig(v).status().message().find("factor_dim=x is not an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace clickd
