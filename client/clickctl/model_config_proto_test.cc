// clickctl's model flags, sent through the shared conversion
// (wire/model_config_proto.h), must parse back on the server to the same
// model, or `clickctl models create` would make another model.
#include "wire/model_config_proto.h"

#include "client/clickctl/model_flags.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

// What clickctl sends for every optimizer is what the server parses back.
TEST(ModelConfigToProto, EveryOptimizerRoundTripsThroughTheServersParser) {
  for (const char* optimizer :
       {"ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd", "pa", "cw", "metagrad_diag",
        "ada_diag", "ada_diag_da", "ada_full", "ada_full_da", "ada_fd", "ada_fd_da", "ons",
        "fd_son", "metagrad"}) {
    ModelFlagValues v;
    v.optimizer = optimizer;
    v.loss = "hinge";
    v.bits = 8;
    v.hash_seed = 7;
    v.bias = false;
    v.interactions = "user:ad,user:ad:page";
    v.shards = 4;
    auto config = BuildModelConfig(v);
    ASSERT_TRUE(config.ok()) << optimizer << ": " << config.status();
    config->name = "m1";
    const v1::ModelConfig sent = ModelConfigToProto(*config);
    EXPECT_EQ(sent.optimizer(), optimizer);
    auto parsed = ToModelConfig(sent);
    ASSERT_TRUE(parsed.ok()) << optimizer << ": " << parsed.status();
    std::string diff;
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(ModelConfigToProto(*parsed), sent))
        << optimizer << ": " << diff;
  }
}

TEST(ModelConfigToProto, RoundTripsThroughTheServersParser) {
  ModelFlagValues v;
  v.alpha = 0.05;
  v.lambda1 = 1;
  v.lambda1_times_t = true;
  v.ftrl_decay = 0.995;
  v.variants =
      "fast:alpha=0.3,lambda1=0.5;ada:optimizer=adagrad_da,eta=0.05,admission_probability=0.5";
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  auto back = ToModelConfig(ModelConfigToProto(*config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->optimizer.ftrl.alpha, 0.05);
  EXPECT_EQ(back->optimizer.ftrl.lambda1, 1);
  EXPECT_TRUE(back->optimizer.ftrl.lambda1_times_t);
  EXPECT_EQ(back->optimizer.ftrl.decay, 0.995);
  ASSERT_EQ(back->variants.size(), 2u);
  EXPECT_EQ(back->variants[0].name, "fast");
  EXPECT_EQ(back->variants[0].optimizer.ftrl.alpha, 0.3);
  EXPECT_EQ(back->variants[0].optimizer.ftrl.lambda1, 0.5);
  EXPECT_EQ(back->variants[1].optimizer.type, OptimizerType::kAdagradDa);
  EXPECT_EQ(back->variants[1].optimizer.adagrad.eta, 0.05);
  EXPECT_EQ(back->variants[1].admission.probability, 0.5);
  EXPECT_EQ(back->variants[0].admission.policy, AdmissionOptions::Policy::kAll);
  // The config round-trips whole: proto -> config -> proto is the identity.
  EXPECT_EQ(ModelConfigToProto(*back).SerializeAsString(),
            ModelConfigToProto(*config).SerializeAsString());
  EXPECT_EQ(back->num_shards, config->num_shards);
}

TEST(ModelConfigToProto, BloomAdmissionRoundTripsThroughTheServersParser) {
  ModelFlagValues v;
  v.admission = "bloom";
  v.admission_min_count = 3;
  v.admission_counters = 1 << 16;
  v.admission_generation_sightings = 777;
  v.variants = "b:admission=bloom,admission_min_count=5";
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  const v1::ModelConfig proto = ModelConfigToProto(*config);
  EXPECT_EQ(proto.admission().min_count(), 3u);
  EXPECT_EQ(proto.admission().counters(), 1u << 16);
  EXPECT_EQ(proto.admission().generation_sightings(), 777u);
  auto back = ToModelConfig(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->admission.policy, AdmissionOptions::Policy::kBloom);
  EXPECT_EQ(back->admission.min_count, 3u);
  EXPECT_EQ(back->admission.counters, 1u << 16);
  EXPECT_EQ(back->admission.generation_sightings, 777u);
  EXPECT_EQ(back->variants[0].admission.policy, AdmissionOptions::Policy::kBloom);
  EXPECT_EQ(back->variants[0].admission.min_count, 5u);
  EXPECT_EQ(ModelConfigToProto(*back).SerializeAsString(), proto.SerializeAsString());
  // Both policies at once: refused, naming the field.
  v1::ModelConfig both = proto;
  both.mutable_admission()->set_probability(0.5);
  EXPECT_EQ(ToModelConfig(both).status().message(),
            "config.admission: probability and min_count are two policies; set one");
}

TEST(ModelConfigToProto, ClassifierParamsRoundTripThroughTheServersParser) {
  ModelFlagValues v;
  v.optimizer = "cw";
  v.loss = "hinge";
  v.cw_eta = 0.75;
  v.cw_a = 0.5;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  auto back = ToModelConfig(ModelConfigToProto(*config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->optimizer.type, OptimizerType::kCw);
  EXPECT_EQ(back->optimizer.cw.eta, 0.75);
  EXPECT_EQ(back->optimizer.cw.a, 0.5);
  v = ModelFlagValues{};
  v.optimizer = "pa";
  v.loss = "hinge";
  v.pa_c = 0.02;
  config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  back = ToModelConfig(ModelConfigToProto(*config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->optimizer.pa.c, 0.02);
}

TEST(ModelConfigToProto, MetaGradParamsRoundTripThroughTheServersParser) {
  ModelFlagValues v;
  v.optimizer = "metagrad_diag";
  v.metagrad_diameter = 6;
  v.metagrad_gradient_bound = 0.25;
  auto config = BuildModelConfig(v);
  ASSERT_TRUE(config.ok()) << config.status();
  auto back = ToModelConfig(ModelConfigToProto(*config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->optimizer.type, OptimizerType::kMetaGradDiag);
  EXPECT_EQ(back->optimizer.metagrad_diag.diameter, 6);
  EXPECT_EQ(back->optimizer.metagrad_diag.gradient_bound, 0.25);
}

}  // namespace
}  // namespace clickd
