// The impression-to-click loop through the real clickd binary: Predict logs
// impressions, Feedback joins labels to them and the model learns each as
// an Update of the same features would (the same state digest); every
// outcome per item; bad requests refused naming the field, changing
// nothing; a full join buffer; expiry at the TTL by the server's own clock;
// the buffer across SIGKILL restarts, by update-log replay and from a
// snapshot; uncertainty, explanations and calibrated probabilities, the
// fitted calibration across a SIGKILL restart from a snapshot.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;

std::unique_ptr<ServerProcess> Start(const std::string& data_dir,
                                     std::vector<std::string> more_flags = {}) {
  ServerOptions options;
  options.flags = {"--data_dir=" + data_dir, "--snapshot_interval=0", "--metrics_port=0"};
  for (std::string& flag : more_flags) options.flags.push_back(std::move(flag));
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// The client for everything but Feedback, which the raw stub sends.
struct Clients {
  std::unique_ptr<ClickdClient> client;
  std::unique_ptr<v1::Clickd::Stub> stub;
};

Clients Connect(const ServerProcess& server) {
  Clients c;
  auto client = ClickdClient::Create(server.address());
  EXPECT_TRUE(client.ok()) << client.status();
  if (client.ok()) c.client = *std::move(client);
  c.stub = v1::Clickd::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  return c;
}

absl::StatusOr<v1::FeedbackResponse> SendFeedback(v1::Clickd::Stub& stub,
                                                  const v1::FeedbackRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::FeedbackResponse response;
  const grpc::Status s = stub.Feedback(&context, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  return response;
}

v1::ModelConfig LoopConfig(const std::string& name, int64_t ttl_seconds) {
  v1::ModelConfig c;
  c.set_name(name);
  c.mutable_hashing()->add_interactions()->add_namespaces("ctx");
  c.mutable_hashing()->mutable_interactions(0)->add_namespaces("ad");
  if (ttl_seconds > 0) {
    c.mutable_feedback()->set_ttl_seconds(ttl_seconds);
    c.mutable_feedback()->set_policy("wait_negative");
  }
  return c;
}

void FillContext(v1::Example* context) {
  auto* ns = context->add_namespaces();
  ns->set_name("ctx");
  ns->add_features()->set_name("site=news");
  ns->add_features()->set_name("hour=9");
}

void FillAd(int ad, v1::Example* candidate) {
  auto* ns = candidate->add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_id(ad);
}

v1::PredictRequest Impressions(const std::string& model, int ads, bool log = true) {
  v1::PredictRequest r;
  r.set_model(model);
  r.set_log_impressions(log);
  FillContext(r.mutable_context());
  for (int a = 0; a < ads; ++a) FillAd(a, r.add_candidates());
  return r;
}

v1::FeedbackRequest Labels(const std::string& model,
                           std::vector<std::tuple<uint64_t, float, float>> items) {
  v1::FeedbackRequest r;
  r.set_model(model);
  for (const auto& [id, label, importance] : items) {
    auto* item = r.add_items();
    item->set_impression_id(id);
    item->set_label(label);
    if (importance != 1.0f) item->set_importance(importance);
  }
  return r;
}

std::vector<v1::FeedbackStatus> Statuses(const v1::FeedbackResponse& response) {
  std::vector<v1::FeedbackStatus> out;
  for (int s : response.statuses()) out.push_back(static_cast<v1::FeedbackStatus>(s));
  return out;
}

TEST(Feedback, JoinsLearnsAsAnUpdateRefusesBadInputAndSurvivesRestarts) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/feedback_test_", getpid());
  std::filesystem::remove_all(dir);
  std::string digest;
  uint64_t pending_id = 0;
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    Clients c = Connect(*server);
    ASSERT_TRUE(c.client->CreateModel(LoopConfig("loop", 3600)).ok());
    ASSERT_TRUE(c.client->CreateModel(LoopConfig("twin", 0)).ok());
    ASSERT_TRUE(c.client->CreateModel(LoopConfig("other", 3600)).ok());

    auto predicted = c.client->Predict(Impressions("loop", 3));
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    ASSERT_EQ(predicted->predictions_size(), 3);
    const uint64_t id0 = predicted->predictions(0).impression_id();
    EXPECT_EQ(predicted->predictions(1).impression_id(), id0 + 1);
    EXPECT_EQ(predicted->predictions(2).impression_id(), id0 + 2);
    pending_id = id0 + 1;
    auto other = c.client->Predict(Impressions("other", 1));
    ASSERT_TRUE(other.ok()) << other.status();
    // Logging learns nothing under wait_negative.
    EXPECT_EQ(*c.client->StateDigest("loop"), *c.client->StateDigest("twin"));

    auto joined = SendFeedback(*c.stub, Labels("loop", {{id0, 1.0f, 1.0f}, {id0 + 2, 0.0f, 2.0f}}));
    ASSERT_TRUE(joined.ok()) << joined.status();
    EXPECT_EQ(Statuses(*joined),
              (std::vector<v1::FeedbackStatus>{v1::FEEDBACK_JOINED, v1::FEEDBACK_JOINED}));
    EXPECT_EQ(joined->joined(), 2u);
    EXPECT_EQ(joined->model_version(), 2u);

    // The same examples as one Update: the same state.
    v1::UpdateRequest update;
    update.set_model("twin");
    auto* impression = update.add_impressions();
    FillContext(impression->mutable_context());
    auto* first = impression->add_candidates();
    FillAd(0, first->mutable_example());
    first->set_label(1);
    auto* third = impression->add_candidates();
    FillAd(2, third->mutable_example());
    third->set_label(0);
    third->set_importance(2);
    ASSERT_TRUE(c.client->Update(update).ok());
    digest = *c.client->StateDigest("loop");
    EXPECT_EQ(digest, *c.client->StateDigest("twin"));

    // Every other outcome, per item, changing nothing.
    auto mixed = SendFeedback(
        *c.stub, Labels("loop", {{id0, 1.0f, 1.0f},
                                 {id0 + 3, 1.0f, 1.0f},
                                 {other->predictions(0).impression_id(), 1.0f, 1.0f}}));
    ASSERT_TRUE(mixed.ok()) << mixed.status();
    EXPECT_EQ(Statuses(*mixed),
              (std::vector<v1::FeedbackStatus>{v1::FEEDBACK_ALREADY_LABELLED, v1::FEEDBACK_UNKNOWN,
                                               v1::FEEDBACK_OTHER_MODEL}));
    EXPECT_EQ(mixed->joined(), 0u);

    // Bad requests: the field and the limit named, nothing applied.
    auto nan = SendFeedback(*c.stub, Labels("loop", {{pending_id, 1.0f, 1.0f}, {id0, NAN, 1}}));
    EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(nan.status().message(), "items[1].label is nan")) << nan.status();
    auto two = SendFeedback(*c.stub, Labels("loop", {{pending_id, 2.0f, 1.0f}}));
    EXPECT_TRUE(absl::StrContains(two.status().message(), "items[0].label is 2")) << two.status();
    auto negative = SendFeedback(*c.stub, Labels("loop", {{pending_id, 1.0f, -1.0f}}));
    EXPECT_TRUE(absl::StrContains(negative.status().message(), "items[0].importance is -1"))
        << negative.status();
    v1::FeedbackRequest many = Labels("loop", {});
    for (int i = 0; i < 10001; ++i) many.add_items()->set_impression_id(pending_id);
    auto too_many = SendFeedback(*c.stub, many);
    EXPECT_EQ(too_many.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(too_many.status().message(), "items has 10001 entries; the limit is 10000");
    EXPECT_EQ(SendFeedback(*c.stub, Labels("loop", {})).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(SendFeedback(*c.stub, Labels("nope", {{1, 1, 1}})).status().code(),
              absl::StatusCode::kNotFound);
    auto no_loop = SendFeedback(*c.stub, Labels("twin", {{1, 1, 1}}));
    EXPECT_EQ(no_loop.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StrContains(no_loop.status().message(), "feedback.ttl_seconds"));
    EXPECT_EQ(c.client->Predict(Impressions("twin", 1)).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(*c.client->StateDigest("loop"), digest);

    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  {
    // Replayed from the log: the model, and the buffer with its pending
    // impression, which can still be labelled once.
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    Clients c = Connect(*server);
    EXPECT_EQ(*c.client->StateDigest("loop"), digest);
    ASSERT_TRUE(c.client->SnapshotModel("loop").ok());
    auto joined = SendFeedback(*c.stub, Labels("loop", {{pending_id, 1.0f, 1.0f}}));
    ASSERT_TRUE(joined.ok()) << joined.status();
    EXPECT_EQ(Statuses(*joined), std::vector<v1::FeedbackStatus>{v1::FEEDBACK_JOINED});
    // The next ids follow the last ones issued before the crash.
    auto next = c.client->Predict(Impressions("loop", 1));
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ(next->predictions(0).impression_id(), pending_id + 2);
    digest = *c.client->StateDigest("loop");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  // From the snapshot plus the log after it.
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  Clients c = Connect(*server);
  EXPECT_EQ(*c.client->StateDigest("loop"), digest);
  auto again = SendFeedback(
      *c.stub, Labels("loop", {{pending_id, 1.0f, 1.0f}, {pending_id + 2, 1.0f, 1.0f}}));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Statuses(*again),
            (std::vector<v1::FeedbackStatus>{v1::FEEDBACK_ALREADY_LABELLED, v1::FEEDBACK_JOINED}));
}

TEST(Feedback, FullBufferRefusesAndExpiryLearnsNegativesAtTheTtl) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/feedback_expiry_test_", getpid());
  std::filesystem::remove_all(dir);
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  Clients c = Connect(*server);
  v1::ModelConfig tiny = LoopConfig("tiny", 3600);
  tiny.mutable_feedback()->set_max_buffer_bytes(2048);
  ASSERT_TRUE(c.client->CreateModel(tiny).ok());
  ASSERT_TRUE(c.client->Predict(Impressions("tiny", 3)).ok());
  const std::string before = *c.client->StateDigest("tiny");
  auto full = c.client->Predict(Impressions("tiny", 40));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(full.status().message(), "feedback.max_buffer_bytes"))
      << full.status();
  EXPECT_EQ(*c.client->StateDigest("tiny"), before);
  // The scores without logging are still served.
  EXPECT_TRUE(c.client->Predict(Impressions("tiny", 40, /*log=*/false)).ok());

  // TTL 1 s: the server's clock learns the three as negatives.
  ASSERT_TRUE(c.client->CreateModel(LoopConfig("short", 1)).ok());
  ASSERT_TRUE(c.client->Predict(Impressions("short", 3)).ok());
  uint64_t updates = 0;
  for (int i = 0; i < 150 && updates < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    updates = c.client->GetModel("short")->updates();
  }
  EXPECT_EQ(updates, 3u);
}

TEST(Feedback, UncertaintyExplanationsAndCalibration) {
  auto server = ServerProcess::Start(ServerOptions{});
  ASSERT_TRUE(server.ok()) << server.status();
  Clients c = Connect(**server);
  v1::ModelConfig config = LoopConfig("explained", 0);
  config.mutable_calibration()->set_enabled(true);
  ASSERT_TRUE(c.client->CreateModel(config).ok());
  v1::UpdateRequest update;
  update.set_model("explained");
  for (int i = 0; i < 20; ++i) {
    auto* impression = update.add_impressions();
    FillContext(impression->mutable_context());
    auto* candidate = impression->add_candidates();
    FillAd(i % 3, candidate->mutable_example());
    candidate->set_label(i % 3 == 0 ? 1 : 0);
  }
  ASSERT_TRUE(c.client->Update(update).ok());

  v1::PredictRequest request = Impressions("explained", 2, /*log=*/false);
  request.set_uncertainty(true);
  request.set_explain_top_k(100);
  auto response = c.client->Predict(request);
  ASSERT_TRUE(response.ok()) << response.status();
  for (const v1::Prediction& p : response->predictions()) {
    ASSERT_TRUE(p.has_uncertainty());
    EXPECT_GT(p.uncertainty(), 0);
    EXPECT_TRUE(std::isfinite(p.uncertainty()));
    double sum = 0;
    for (const v1::Contribution& e : p.explanation()) sum += e.contribution();
    EXPECT_NEAR(sum, p.margin(), 1e-9);
    // Plain features are named; the bias too.
    std::vector<std::string> named;
    for (const v1::Contribution& e : p.explanation()) {
      if (!e.feature().empty()) named.push_back(e.feature());
    }
    EXPECT_NE(std::find(named.begin(), named.end(), "ctx:site=news"), named.end());
    EXPECT_NE(std::find(named.begin(), named.end(), "bias"), named.end());
    // Too few clicks for a fit: the calibration is the identity.
    ASSERT_TRUE(p.has_calibrated_prediction());
    EXPECT_EQ(p.calibrated_prediction(), p.prediction());
  }
  // An ad the model has seen is less uncertain than one it has not.
  EXPECT_LT(response->predictions(0).uncertainty(),
            c.client
                ->Predict([&] {
                  v1::PredictRequest r = request;
                  r.mutable_candidates(0)->mutable_namespaces(0)->mutable_features(0)->set_id(999);
                  return r;
                }())
                ->predictions(0)
                .uncertainty());
  request.set_explain_top_k(101);
  auto refused = c.client->Predict(request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "explain_top_k is 101; the limit is 100");
}

// A fitted calibration (10,000 examples, over 100 clicks) survives a
// SIGKILL after a snapshot: Predict serves the same calibrated probability.
TEST(Feedback, CalibrationSurvivesARestartFromASnapshot) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/feedback_calibration_test_", getpid());
  std::filesystem::remove_all(dir);
  v1::PredictRequest request = Impressions("calibrated", 10, /*log=*/false);
  std::vector<std::pair<double, double>> before;  // prediction, calibrated
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    Clients c = Connect(*server);
    v1::ModelConfig config = LoopConfig("calibrated", 0);
    config.mutable_calibration()->set_enabled(true);
    ASSERT_TRUE(c.client->CreateModel(config).ok());
    for (int u = 0; u < 12; ++u) {
      v1::UpdateRequest update;
      update.set_model("calibrated");
      for (int i = 0; i < 100; ++i) {
        auto* impression = update.add_impressions();
        FillContext(impression->mutable_context());
        for (int ad = 0; ad < 10; ++ad) {
          auto* candidate = impression->add_candidates();
          FillAd(ad, candidate->mutable_example());
          // Click rates from 5 % (ad 0) to 32 % (ad 9).
          candidate->set_label((u * 100 + i) * 31 % 100 < 5 + 3 * ad ? 1 : 0);
        }
      }
      ASSERT_TRUE(c.client->Update(update).ok());
    }
    auto response = c.client->Predict(request);
    ASSERT_TRUE(response.ok()) << response.status();
    bool corrected = false;
    for (const v1::Prediction& p : response->predictions()) {
      ASSERT_TRUE(p.has_calibrated_prediction());
      before.emplace_back(p.prediction(), p.calibrated_prediction());
      corrected = corrected || p.calibrated_prediction() != p.prediction();
    }
    EXPECT_TRUE(corrected) << "no fit yet";
    ASSERT_TRUE(c.client->SnapshotModel("calibrated").ok());
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  Clients c = Connect(*server);
  auto response = c.client->Predict(request);
  ASSERT_TRUE(response.ok()) << response.status();
  std::vector<std::pair<double, double>> after;
  for (const v1::Prediction& p : response->predictions()) {
    after.emplace_back(p.prediction(), p.calibrated_prediction());
  }
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// A keyed Update and Feedback acknowledged before a SIGKILL are duplicates
// when retried after the restart (the keys are in the update log), and
// again after a snapshot (the keys are in it).
TEST(Idempotency, RetriesAfterACrashAreDuplicates) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/idempotency_test_", getpid());
  std::filesystem::remove_all(dir);
  v1::UpdateRequest update;
  update.set_model("loop");
  update.set_idempotency_key("impression-77");
  auto* impression = update.add_impressions();
  FillContext(impression->mutable_context());
  auto* candidate = impression->add_candidates();
  FillAd(4, candidate->mutable_example());
  candidate->set_label(1);
  std::string digest;
  uint64_t id = 0;
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    Clients c = Connect(*server);
    ASSERT_TRUE(c.client->CreateModel(LoopConfig("loop", 3600)).ok());
    auto first = c.client->Update(update);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->duplicate());
    EXPECT_EQ(first->applied(), 1u);
    auto predicted = c.client->Predict(Impressions("loop", 1));
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    id = predicted->predictions(0).impression_id();
    v1::FeedbackRequest click = Labels("loop", {{id, 1.0f, 1.0f}});
    click.set_idempotency_key("click-1");
    auto joined = SendFeedback(*c.stub, click);
    ASSERT_TRUE(joined.ok()) << joined.status();
    EXPECT_FALSE(joined->duplicate());
    // A bad key is refused naming the field.
    click.set_idempotency_key("bad key");
    EXPECT_TRUE(absl::StrContains(SendFeedback(*c.stub, click).status().message(),
                                  "idempotency_key has byte 32"));
    digest = *c.client->StateDigest("loop");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  for (bool snapshot : {false, true}) {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    Clients c = Connect(*server);
    auto again = c.client->Update(update);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->duplicate());
    EXPECT_EQ(again->applied(), 0u);
    v1::FeedbackRequest click = Labels("loop", {{id, 1.0f, 1.0f}});
    click.set_idempotency_key("click-1");
    auto repeated = SendFeedback(*c.stub, click);
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    EXPECT_TRUE(repeated->duplicate());
    EXPECT_EQ(repeated->statuses_size(), 0);
    EXPECT_EQ(*c.client->StateDigest("loop"), digest);
    if (!snapshot) {
      ASSERT_TRUE(c.client->SnapshotModel("loop").ok());
    }
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// FeedbackStream: one answer per request, in order; a bad message ends the
// stream naming its index, the messages before it applied.
TEST(Feedback, StreamAnswersEachRequestInOrder) {
  auto server = ServerProcess::Start(ServerOptions{});
  ASSERT_TRUE(server.ok()) << server.status();
  Clients c = Connect(**server);
  ASSERT_TRUE(c.client->CreateModel(LoopConfig("loop", 3600)).ok());
  auto predicted = c.client->Predict(Impressions("loop", 3));
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  const uint64_t id = predicted->predictions(0).impression_id();

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = c.stub->FeedbackStream(&context);
  v1::FeedbackResponse answer;
  ASSERT_TRUE(stream->Write(Labels("loop", {{id, 1.0f, 1.0f}, {id + 1, 0.0f, 1.0f}})));
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(Statuses(answer),
            (std::vector<v1::FeedbackStatus>{v1::FEEDBACK_JOINED, v1::FEEDBACK_JOINED}));
  ASSERT_TRUE(stream->Write(Labels("loop", {{id, 1.0f, 1.0f}})));
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(Statuses(answer), std::vector<v1::FeedbackStatus>{v1::FEEDBACK_ALREADY_LABELLED});
  ASSERT_TRUE(stream->Write(Labels("loop", {{id + 2, NAN, 1.0f}})));
  EXPECT_FALSE(stream->Read(&answer));
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(status.error_message(), "message 2: items[0].label is nan"))
      << status.error_message();
  EXPECT_EQ(c.client->GetModel("loop")->updates(), 2u);
}

}  // namespace
}  // namespace clickd
