#include "wire/model_config_proto.h"

#include <cmath>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(Convert, ModelConfigDefaultsAndRoundTrip) {
  v1::ModelConfig p;
  p.set_name("ctr");
  p.mutable_ftrl()->set_alpha(0.05);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->optimizer.type, OptimizerType::kFtrl);
  EXPECT_EQ(c->optimizer.ftrl.alpha, 0.05);
  EXPECT_EQ(c->optimizer.ftrl.beta, FtrlParams{}.beta);
  EXPECT_TRUE(c->hashing.bias);
  EXPECT_EQ(c->num_shards, 16);
  const v1::ModelConfig back = ModelConfigToProto(*c);
  EXPECT_EQ(back.optimizer(), "ftrl");
  EXPECT_EQ(back.ftrl().alpha(), 0.05);
  EXPECT_TRUE(back.ftrl().has_beta());
  auto again = ToModelConfig(back);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ModelConfigToProto(*again).SerializeAsString(), back.SerializeAsString());
}

TEST(Convert, AdmissionRoundTripsAndIsCheckedByName) {
  v1::ModelConfig p;
  p.set_name("ctr");
  p.mutable_admission()->set_probability(0.25);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->admission.policy, AdmissionOptions::Policy::kPoisson);
  EXPECT_EQ(c->admission.probability, 0.25);
  EXPECT_EQ(ModelConfigToProto(*c).admission().probability(), 0.25);
  // Unset and 1 both admit every feature, and show no admission.
  for (double all : {0.0, 1.0}) {
    p.mutable_admission()->set_probability(all);
    auto every = ToModelConfig(p);
    ASSERT_TRUE(every.ok()) << every.status();
    EXPECT_EQ(every->admission.policy, AdmissionOptions::Policy::kAll);
    EXPECT_FALSE(ModelConfigToProto(*every).has_admission());
  }
  for (double bad : {-0.5, 1.5, std::nan("")}) {
    p.mutable_admission()->set_probability(bad);
    const absl::Status s = ToModelConfig(p).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("config.admission.probability"), std::string::npos) << s;
  }
}

TEST(Convert, MemoryBudgetRoundTripsAndIsCheckedByName) {
  v1::ModelConfig p;
  p.set_name("ctr");
  p.mutable_memory()->set_max_bytes(1 << 20);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory.max_bytes, 1u << 20);
  EXPECT_EQ(ModelConfigToProto(*c).memory().max_bytes(), 1u << 20);
  p.clear_memory();
  auto unbounded = ToModelConfig(p);
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ(unbounded->memory.max_bytes, 0u);
  EXPECT_FALSE(ModelConfigToProto(*unbounded).has_memory());
  p.mutable_memory()->set_max_bytes(1000);
  const absl::Status s = ToModelConfig(p).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "config.memory.max_bytes is 1000; must be 0 (unbounded) or in 65536..1099511627776");
}

TEST(Convert, TtlRoundTripsAndIsCheckedByName) {
  v1::ModelConfig p;
  p.set_name("ctr");
  p.mutable_memory()->set_ttl_rounds(1'000'000);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory.ttl_rounds, 1'000'000u);
  EXPECT_EQ(ModelConfigToProto(*c).memory().ttl_rounds(), 1'000'000u);
  p.mutable_memory()->set_ttl_rounds(5);
  const absl::Status s = ToModelConfig(p).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "config.memory.ttl_rounds is 5; must be 0 (no TTL) or in 64..281474976710656 (2^48)");
}

TEST(Convert, ClassifierParamsRoundTrip) {
  v1::ModelConfig p;
  p.set_name("pa");
  p.set_optimizer("pa");
  p.set_loss("hinge");
  p.mutable_pa()->set_c(0.3);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->optimizer.type, OptimizerType::kPa);
  EXPECT_EQ(c->optimizer.pa.c, 0.3);
  v1::ModelConfig back = ModelConfigToProto(*c);
  EXPECT_EQ(back.optimizer(), "pa");
  EXPECT_EQ(back.pa().c(), 0.3);
  EXPECT_FALSE(back.has_cw());
  EXPECT_FALSE(back.has_ftrl());

  p.clear_pa();
  p.set_optimizer("cw");
  p.mutable_cw()->set_eta(0.7);
  c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->optimizer.cw.eta, 0.7);
  EXPECT_EQ(c->optimizer.cw.a, CwParams{}.a);
  back = ModelConfigToProto(*c);
  EXPECT_EQ(back.cw().eta(), 0.7);
  EXPECT_TRUE(back.cw().has_a());
  EXPECT_FALSE(back.has_pa());
  auto again = ToModelConfig(back);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ModelConfigToProto(*again).SerializeAsString(), back.SerializeAsString());

  p.mutable_cw()->set_eta(1);
  EXPECT_EQ(ToModelConfig(p).status().message(), "config.cw.eta is 1; must be in (0.5, 1)");
  p.clear_cw();
  p.set_loss("");  // logistic
  EXPECT_EQ(ToModelConfig(p).status().message(),
            "config.loss is logistic; optimizer cw is a binary classifier and takes loss hinge "
            "(labels -1/+1, prediction the margin)");
}

TEST(Convert, MetaGradDiagParamsRoundTrip) {
  v1::ModelConfig p;
  p.set_name("mg");
  p.set_optimizer("metagrad_diag");
  p.mutable_metagrad_diag()->set_diameter(4);
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->optimizer.type, OptimizerType::kMetaGradDiag);
  EXPECT_EQ(c->optimizer.metagrad_diag.diameter, 4);
  EXPECT_EQ(c->optimizer.metagrad_diag.gradient_bound, MetaGradDiagParams{}.gradient_bound);
  v1::ModelConfig back = ModelConfigToProto(*c);
  EXPECT_EQ(back.optimizer(), "metagrad_diag");
  EXPECT_EQ(back.metagrad_diag().diameter(), 4);
  EXPECT_TRUE(back.metagrad_diag().has_gradient_bound());  // the default, filled in
  EXPECT_EQ(back.metagrad_diag().gradient_bound(), MetaGradDiagParams{}.gradient_bound);
  EXPECT_FALSE(back.has_ftrl());
  EXPECT_FALSE(back.has_cw());
  auto again = ToModelConfig(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ModelConfigToProto(*again).SerializeAsString(), back.SerializeAsString());

  // No params at all: both defaults, echoed.
  p.clear_metagrad_diag();
  c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  back = ModelConfigToProto(*c);
  EXPECT_EQ(back.metagrad_diag().diameter(), MetaGradDiagParams{}.diameter);
  EXPECT_EQ(back.metagrad_diag().gradient_bound(), MetaGradDiagParams{}.gradient_bound);

  p.mutable_metagrad_diag()->set_gradient_bound(-1);
  EXPECT_EQ(ToModelConfig(p).status().message(),
            "config.metagrad_diag.gradient_bound is -1; must be finite and > 0");
  // Another optimizer's params are checked too (numeric bounds), and not
  // echoed.
  p.set_optimizer("ftrl");
  EXPECT_EQ(ToModelConfig(p).status().message(),
            "config.metagrad_diag.gradient_bound is -1; must be finite and > 0");
  p.mutable_metagrad_diag()->set_gradient_bound(2);
  c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(ModelConfigToProto(*c).has_metagrad_diag());
}

TEST(Convert, InvalidConfigsNameTheField) {
  v1::ModelConfig p;
  p.set_name("m");
  p.set_optimizer("adam");
  EXPECT_NE(ToModelConfig(p).status().message().find("config.optimizer \"adam\""),
            std::string::npos)
      << ToModelConfig(p).status();
  p.set_optimizer("pc_ogd");
  p.mutable_pc_ogd()->set_radius(-1);
  EXPECT_NE(ToModelConfig(p).status().message().find("config.pc_ogd.radius is -1"),
            std::string::npos);
  p.clear_pc_ogd();
  p.mutable_hashing()->add_interactions()->add_namespaces("a");
  EXPECT_NE(ToModelConfig(p).status().message().find("config.hashing.interactions[0]"),
            std::string::npos);
  p.clear_hashing();
  p.set_name("bad name");
  EXPECT_NE(ToModelConfig(p).status().message().find("config.name"), std::string::npos);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

TEST(Convert, FactorizationRoundTripsAndIsCheckedByName) {
  v1::ModelConfig p;
  p.set_name("ctr");
  v1::Factorization* f = p.mutable_factorization();
  f->set_kind("ffm");
  f->add_fields("user");
  f->add_fields("ad");
  auto c = ToModelConfig(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->factorization.kind, FactorizationConfig::Kind::kFfm);
  EXPECT_EQ(c->factorization.dim, 4);
  EXPECT_EQ(c->factorization.eta, 1.0);
  const v1::ModelConfig back = ModelConfigToProto(*c);
  EXPECT_EQ(back.factorization().kind(), "ffm");
  EXPECT_EQ(back.factorization().dim(), 4u);
  auto again = ToModelConfig(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ModelConfigToProto(*again).SerializeAsString(), back.SerializeAsString());
  // No factorization: none shown.
  EXPECT_FALSE(ModelConfigToProto(ModelConfig{}).has_factorization());

  f->set_dim(0);
  EXPECT_EQ(ToModelConfig(p).status().message(), "config.factorization.dim is 0; must be in 1..64");
  f->set_dim(1000000);
  EXPECT_EQ(ToModelConfig(p).status().message(),
            "config.factorization.dim is 1000000; must be in 1..64");
  f->clear_dim();
  f->set_kind("poly2");
  EXPECT_EQ(ToModelConfig(p).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ToModelConfig(p).status().message().find("config.factorization.kind \"poly2\""),
            std::string::npos);
}

}  // namespace
}  // namespace clickd
