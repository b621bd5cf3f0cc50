// Dense blocks through the real clickd binary: CreateModel with dense
// namespaces, Predict and Update with dense values (context and candidate),
// validation that names the field and the limit and applies nothing, and
// the dense state across SIGKILL restarts (update-log replay, snapshot).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;

std::unique_ptr<ServerProcess> Start(const std::string& data_dir) {
  ServerOptions options;
  options.flags = {"--data_dir=" + data_dir, "--snapshot_interval=0"};
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<ClickdClient> Connect(const ServerProcess& server) {
  auto client = ClickdClient::Create(server.address());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

v1::ModelConfig DenseConfig() {
  v1::ModelConfig c;
  c.set_name("emb");
  auto* user = c.add_dense_namespaces();
  user->set_name("user_emb");
  user->set_dim(4);
  auto* ad = c.add_dense_namespaces();
  ad->set_name("ad_emb");
  ad->set_dim(2);
  c.set_dense_optimizer("ada_fd");
  c.mutable_dense()->set_tau(2);
  c.mutable_dense()->set_eta(0.5);
  return c;
}

void AddDense(v1::Example* e, const std::string& name, std::vector<float> values) {
  auto* d = e->add_dense();
  d->set_namespace_(name);
  for (float v : values) d->add_values(v);
}

// An impression: the user's embedding in the context, each ad's embedding
// and id in its candidate; clicked exactly when the ad embedding's first
// entry is positive (the ad ids carry no signal).
v1::UpdateRequest Impression(int seed) {
  v1::UpdateRequest r;
  r.set_model("emb");
  auto* imp = r.add_impressions();
  const float u = (seed % 2 == 0) ? 1.0f : -1.0f;
  AddDense(imp->mutable_context(), "user_emb", {u, 0.5f * u, 0.0f, 1.0f});
  for (int a = 0; a < 2; ++a) {
    auto* c = imp->add_candidates();
    const float v = (seed + a) % 2 == 0 ? 1.0f : -1.0f;
    AddDense(c->mutable_example(), "ad_emb", {v, 1.0f});
    auto* ns = c->mutable_example()->add_namespaces();
    ns->set_name("ad");
    ns->add_features()->set_id(a);
    c->set_label(v > 0 ? 1.0f : 0.0f);
  }
  return r;
}

v1::PredictRequest Predict(float agreement) {
  v1::PredictRequest r;
  r.set_model("emb");
  AddDense(r.mutable_context(), "user_emb", {1, 0.5f, 0, 1});
  auto* c = r.add_candidates();
  AddDense(c, "ad_emb", {agreement, 1});
  return r;
}

TEST(DenseModels, LearnPredictValidateAndSurviveRestarts) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/dense_test_", getpid());
  std::filesystem::remove_all(dir);
  std::string digest;
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    auto created = client->CreateModel(DenseConfig());
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ(created->config().dense_namespaces_size(), 2);
    EXPECT_EQ(created->config().dense_optimizer(), "ada_fd");
    EXPECT_EQ(created->config().dense().tau(), 2u);
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(client->Update(Impression(i)).ok());

    // The dense part decides.
    auto agree = client->Predict(Predict(1));
    auto disagree = client->Predict(Predict(-1));
    ASSERT_TRUE(agree.ok() && disagree.ok());
    EXPECT_GT(agree->predictions(0).prediction(), 0.6);
    EXPECT_LT(disagree->predictions(0).prediction(), 0.4);

    // Bad dense values: the right code, the field and the limit named, and
    // nothing applied.
    const std::string before = *client->StateDigest("emb");
    v1::UpdateRequest wrong_dim = Impression(1);
    wrong_dim.mutable_impressions(0)
        ->mutable_candidates(1)
        ->mutable_example()
        ->mutable_dense(0)
        ->add_values(3);
    auto refused = client->Update(wrong_dim);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.status().message(),
              "impressions[0].candidates[1].example.dense[0].values has 3 entries; dense "
              "namespace \"ad_emb\" has dimension 2");
    v1::UpdateRequest nan = Impression(1);
    nan.mutable_impressions(0)->mutable_context()->mutable_dense(0)->set_values(2, NAN);
    EXPECT_EQ(client->Update(nan).status().message(),
              "impressions[0].context.dense[0].values[2] is nan; must be finite");
    v1::PredictRequest unknown = Predict(1);
    unknown.mutable_candidates(0)->mutable_dense(0)->set_namespace_("page_emb");
    EXPECT_EQ(client->Predict(unknown).status().message(),
              "candidates[0].dense[0].namespace \"page_emb\" is not a dense namespace of this "
              "model");
    EXPECT_EQ(*client->StateDigest("emb"), before);
    EXPECT_EQ(client->GetModel("emb")->updates(), 120u);

    digest = before;
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  {
    // Restored by replaying the log: the dense learner included.
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    EXPECT_EQ(*client->StateDigest("emb"), digest);
    ASSERT_TRUE(client->SnapshotModel("emb").ok());
    ASSERT_TRUE(client->Update(Impression(7)).ok());
    digest = *client->StateDigest("emb");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  EXPECT_EQ(*client->StateDigest("emb"), digest);  // snapshot + one record
  EXPECT_TRUE(absl::StrContains(server->Output(), "from snapshot 60 + 1 update-log records"))
      << server->Output();
}

// A dense learner's work is priced before it starts (issue 33, N12):
// ada_full costs d^3 per example, so at d = 2048 one example is ~8.6e9
// multiply-adds (6 s); an Update of 10 of them held a worker for 60 s.
TEST(DenseModels, DenseWorkIsPricedBeforeItStarts) {
  ServerOptions options;
  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = (*server)->NewStub();
  auto create = [&](const std::string& name, int dim) {
    v1::CreateModelRequest request;
    v1::ModelConfig* c = request.mutable_config();
    c->set_name(name);
    auto* ns = c->add_dense_namespaces();
    ns->set_name("emb");
    ns->set_dim(dim);
    c->set_dense_optimizer("ada_full");
    grpc::ClientContext context;
    v1::CreateModelResponse response;
    return stub->CreateModel(&context, request, &response);
  };
  auto update = [&](const std::string& name, int dim) {
    v1::UpdateRequest request;
    request.set_model(name);
    for (int i = 0; i < 10; ++i) {
      auto* le = request.add_examples();
      AddDense(le->mutable_example(), "emb", std::vector<float>(dim, 0.01f * (i + 1)));
      le->set_label(i % 2);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::UpdateResponse response;
    return stub->Update(&context, request, &response);
  };
  ASSERT_TRUE(create("wide", 2048).ok());
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status refused = update("wide", 2048);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_EQ(refused.error_message(),
            "the update has 10 examples with dense values, each a step of ada_full at dimension "
            "2048 (8589934592 multiply-adds); the limit is --max_dense_work_per_update "
            "4294967296 (0 such examples per update)");
  ASSERT_TRUE(create("narrow", 64).ok());
  const grpc::Status learned = update("narrow", 64);
  EXPECT_TRUE(learned.ok()) << learned.error_message();
  stub.reset();
  EXPECT_EQ((*server)->Stop().ToString(), "exit 0");
}

TEST(DenseModels, BadDenseConfigsAreRefusedNamingTheField) {
  ServerOptions options;
  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = Connect(**server);
  v1::ModelConfig config = DenseConfig();
  config.set_dense_optimizer("adam");
  EXPECT_TRUE(absl::StartsWith(client->CreateModel(config).status().message(),
                               "config.dense optimizer \"adam\" is unknown"))
      << client->CreateModel(config).status();
  config = DenseConfig();
  config.set_dense_optimizer("ada_full");
  config.mutable_dense_namespaces(0)->set_dim(3000);
  EXPECT_EQ(client->CreateModel(config).status().message(),
            "config.dense_optimizer ada_full takes 1..2048 dimensions; the dense block has 3002");
  config = DenseConfig();
  config.mutable_dense_namespaces(1)->set_name("user_emb");
  EXPECT_EQ(client->CreateModel(config).status().message(),
            "config.dense_namespaces[1].name \"user_emb\" is declared twice");
  // A model without dense namespaces takes no dense values.
  v1::PredictRequest predict = Predict(1);
  predict.set_model("default");
  EXPECT_EQ(client->Predict(predict).status().message(),
            "context.dense has 1 entries; model \"default\" declares no dense namespaces");
}

}  // namespace
}  // namespace clickd
