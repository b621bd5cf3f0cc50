// Integration tests of issue 10 (parts 2 and 3) against the real clickd
// binary: the cost of a request is bounded before any work starts, a
// logged record replays within the limits that accepted it, and model work
// runs on the server's executor, so that one busy model neither freezes
// other calls nor holds the process past its shutdown grace.
//
// The long call is an Update of a big but allowed batch on a model with a
// 3-way interaction (2,000 examples of 64,121 features after interactions:
// seconds of learning in a release build, much more under sanitizers).
// Assertions are on completion order (a call answered while that Update is
// still open), never on how long anything takes.
#include <grpcpp/client_context.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::CheckHealth;
using ::clickd::testing::ServerProcess;
using ::grpc::StatusCode;
using ::grpc::health::v1::HealthCheckResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const bool kFastIdlePolling =
    setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "50", /*overwrite=*/0) == 0;

constexpr auto kCallTimeout = seconds(60);

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(status.error_code(), ": \"", status.error_message(), "\"");
}

void AddNamespace(v1::Example* example, const std::string& name, int features) {
  v1::Namespace* ns = example->add_namespaces();
  ns->set_name(name);
  for (int i = 0; i < features; ++i) ns->add_features()->set_id(static_cast<uint64_t>(i));
}

// An example with `n` features in each of the namespaces "user", "ad", "site".
v1::Example Cube(int n) {
  v1::Example e;
  for (const char* ns : {"user", "ad", "site"}) AddNamespace(&e, ns, n);
  return e;
}

v1::ModelConfig ModelWith(const std::string& name,
                          const std::vector<std::vector<std::string>>& interactions) {
  v1::ModelConfig config;
  config.set_name(name);
  for (const auto& names : interactions) {
    v1::Interaction* i = config.mutable_hashing()->add_interactions();
    for (const std::string& n : names) i->add_namespaces(n);
  }
  return config;
}

v1::UpdateRequest UpdateOf(const std::string& model, const v1::Example& example, int count) {
  v1::UpdateRequest r;
  r.set_model(model);
  for (int i = 0; i < count; ++i) {
    v1::LabeledExample* le = r.add_examples();
    *le->mutable_example() = example;
    le->set_label(i % 2 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

v1::PredictRequest PredictOf(const std::string& model, const v1::Example& context,
                             const v1::Example& candidate) {
  v1::PredictRequest r;
  r.set_model(model);
  *r.mutable_context() = context;
  *r.add_candidates() = candidate;
  return r;
}

class Client {
 public:
  explicit Client(const ServerProcess& server) : stub_(server.NewStub()) {}

  grpc::Status CreateModel(const v1::ModelConfig& config) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::CreateModelRequest request;
    *request.mutable_config() = config;
    v1::CreateModelResponse response;
    return stub_->CreateModel(&context, request, &response);
  }
  grpc::Status GetModel(const std::string& name, bool digest, v1::ModelInfo* info) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::GetModelRequest request;
    request.set_model(name);
    request.set_state_digest(digest);
    v1::GetModelResponse response;
    grpc::Status status = stub_->GetModel(&context, request, &response);
    *info = response.model();
    return status;
  }
  // The model's info with its state digest; a failure is a test failure.
  v1::ModelInfo Digest(const std::string& name) {
    v1::ModelInfo info;
    const grpc::Status status = GetModel(name, true, &info);
    EXPECT_TRUE(status.ok()) << Describe(status);
    return info;
  }
  grpc::Status Update(const v1::UpdateRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::UpdateResponse response;
    return stub_->Update(&context, request, &response);
  }
  grpc::Status Predict(const v1::PredictRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::PredictResponse response;
    return stub_->Predict(&context, request, &response);
  }

 private:
  std::unique_ptr<v1::Clickd::Stub> stub_;
};

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> flags) {
  clickd::testing::ServerOptions options;
  options.flags = std::move(flags);
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

::testing::AssertionResult IsResourceExhausted(const grpc::Status& status,
                                               const std::string& part) {
  if (status.error_code() == StatusCode::RESOURCE_EXHAUSTED &&
      status.error_message().find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "got " << Describe(status) << "; want RESOURCE_EXHAUSTED with \"" << part << "\"";
}

// A fresh directory under the test's temporary directory.
std::string NewDataDir(const std::string& name) {
  std::string path = ::testing::TempDir() + name + "-XXXXXX";
  EXPECT_NE(mkdtemp(path.data()), nullptr);
  return path;
}

// ---------------------------------------------------------------------------
// Part 2: the cost of a request is known and bounded before any work.

TEST(ClickdRequestCost, InteractionExplosionIsRefusedAndChangesNothing) {
  auto server = StartServer({});  // the default limits
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("pair", {{"user", "ad"}})).ok());
  ASSERT_TRUE(client.CreateModel(ModelWith("cube", {{"user", "ad", "site"}})).ok());
  const std::string pair_before = client.Digest("pair").state_digest();
  const std::string cube_before = client.Digest("cube").state_digest();

  // 300 x 300 crosses: 90,601 features for one candidate.
  v1::Example user, ad;
  AddNamespace(&user, "user", 300);
  AddNamespace(&ad, "ad", 300);
  EXPECT_TRUE(IsResourceExhausted(client.Predict(PredictOf("pair", user, ad)),
                                  "candidates[0] (with the context) yields 90601 features after "
                                  "interactions; the limit is 65536"));
  // The same as one Update example.
  v1::Example both = user;
  AddNamespace(&both, "ad", 300);
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("pair", both, 1)),
                                  "examples[0].example yields 90601 features after interactions; "
                                  "the limit is 65536"));
  // 50 x 50 x 50 crosses of a 3-way interaction: 125,151 features from 150.
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("cube", Cube(50), 1)),
                                  "examples[0].example yields 125151 features after interactions; "
                                  "the limit is 65536"));
  // Each example allowed (40^3: 64,121), the request not: 63 of them.
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("cube", Cube(40), 63)),
                                  "in total; the limit is 4000000 (max_features_per_request)"));

  const v1::ModelInfo pair_after = client.Digest("pair");
  const v1::ModelInfo cube_after = client.Digest("cube");
  EXPECT_EQ(pair_after.state_digest(), pair_before);
  EXPECT_EQ(cube_after.state_digest(), cube_before);
  EXPECT_EQ(pair_after.updates(), 0u);
  EXPECT_EQ(cube_after.updates(), 0u);
  // An allowed request still learns.
  EXPECT_TRUE(client.Update(UpdateOf("cube", Cube(40), 2)).ok());
  EXPECT_EQ(client.Digest("cube").updates(), 2u);
  EXPECT_EQ(server->Stop().ToString(), "exit 0") << server->Output();
}

TEST(ClickdRequestCost, RejectsOutOfRangeLimitFlags) {
  for (const char* flag :
       {"--max_features_after_interactions=0", "--max_features_per_request=10",
        "--worker_threads=-1", "--max_queued_calls=0", "--max_learners_per_model=5000",
        "--max_open_streams=0", "--max_inline_predict_features=65537",
        "--max_quiet_inline_predict_features=1048577", "--max_inline_update_features=1048577",
        "--max_inline_update_features=18446744073709551615", "--update_log_group_wait_us=-1",
        "--update_log_group_wait_us=1000001"}) {
    const auto result = clickd::testing::RunClickd({flag});
    EXPECT_EQ(result.status.ToString(), "exit 2") << flag << "\n" << result.output;
    // Named as given, however large the value.
    EXPECT_NE(result.output.find(std::string(flag) + " must be in"), std::string::npos)
        << result.output;
  }
}

// A record logged at the limits replays at restart even when the limits
// were lowered since: replay does not check request limits again.
TEST(ClickdRequestCost, RecordAcceptedAtTheLimitReplaysUnderLowerLimits) {
  const std::string dir = NewDataDir("replay-at-limit");
  // Cube(3): 9 features, 27 crosses and the bias: 37 per example.
  const std::vector<std::string> at_limit = {"--data_dir=" + dir, "--default_model=false",
                                             "--max_features_after_interactions=37",
                                             "--max_features_per_request=74"};
  std::string digest;
  {
    auto server = StartServer(at_limit);
    ASSERT_NE(server, nullptr);
    Client client(*server);
    ASSERT_TRUE(client.CreateModel(ModelWith("cube", {{"user", "ad", "site"}})).ok());
    ASSERT_TRUE(client.Update(UpdateOf("cube", Cube(3), 2)).ok());
    EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("cube", Cube(3), 3)),
                                    "yield 111 features after interactions in total"));
    const v1::ModelInfo info = client.Digest("cube");
    EXPECT_EQ(info.updates(), 2u);
    digest = info.state_digest();
    // SIGKILL: no shutdown snapshot, so the restart replays the log.
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(seconds(30)).has_value());
  }
  auto server =
      StartServer({"--data_dir=" + dir, "--default_model=false",
                   "--max_features_after_interactions=10", "--max_features_per_request=10"});
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->Output().find("+ 1 update-log records"), std::string::npos) << server->Output();
  Client client(*server);
  const v1::ModelInfo info = client.Digest("cube");
  EXPECT_EQ(info.updates(), 2u);
  EXPECT_EQ(info.state_digest(), digest);
  // The lowered limits hold for new requests.
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("cube", Cube(3), 1)), "the limit is 10"));
  EXPECT_EQ(server->Stop().ToString(), "exit 0") << server->Output();
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Part 3: isolation.

// Flags that allow the long Update: 2,000 examples of Cube(40).
std::vector<std::string> LongUpdateFlags(std::vector<std::string> more = {}) {
  std::vector<std::string> flags = {"--max_features_per_request=200000000", "--worker_threads=2",
                                    "--max_learners_per_model=1", "--shutdown_grace_seconds=2"};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

// Sends SIGTERM (a long update may still run) and checks that clickd exits
// 0 within 30 s.
::testing::AssertionResult ExitsCleanlyOnSigterm(ServerProcess& server) {
  server.Signal(SIGTERM);
  const auto exit = server.WaitForExit(seconds(30));
  if (!exit.has_value())
    return ::testing::AssertionFailure() << "clickd did not exit after SIGTERM";
  if (exit->ToString() != "exit 0") {
    return ::testing::AssertionFailure() << exit->ToString() << "\n" << server.Output();
  }
  return ::testing::AssertionSuccess();
}

// The long Update on `model`, in the background; `done` is set when it returns.
std::future<grpc::Status> StartLongUpdate(const ServerProcess& server, const std::string& model,
                                          std::atomic<bool>* done) {
  return std::async(std::launch::async, [&server, model, done] {
    Client client(server);
    // With a queue of one (FullQueueIsRefusedAtOnce), a busy-probe waiting
    // for a worker on a loaded machine can fill the queue just as this
    // arrives: try again until it is taken (bounded).
    grpc::Status status;
    for (int attempt = 0; attempt < 100; ++attempt) {
      status = client.Update(UpdateOf(model, Cube(40), 2000));
      if (status.error_code() != StatusCode::RESOURCE_EXHAUSTED) break;
    }
    *done = true;
    return status;
  });
}

// Returns once a learner of `model` holds the model's executor slot (the
// server runs at most one learner per model here): a one-example Update
// with a short deadline is applied at once while the model is idle, and
// waits in the model's queue, ending DEADLINE_EXCEEDED, once it is busy.
// Such a probe stays queued (as one queued call) until the learner ends.
::testing::AssertionResult WaitUntilBusy(const ServerProcess& server, const std::string& model) {
  auto stub = server.NewStub();
  const auto give_up = Clock::now() + seconds(120);
  while (Clock::now() < give_up) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + seconds(2));
    v1::UpdateResponse response;
    const grpc::Status s = stub->Update(&context, UpdateOf(model, Cube(2), 1), &response);
    if (s.error_code() == StatusCode::DEADLINE_EXCEEDED) return ::testing::AssertionSuccess();
    // With a queue of one, the slot may be held for a moment by a call
    // waiting for a worker (the long update, on a loaded machine): retry.
    if (s.error_code() == StatusCode::RESOURCE_EXHAUSTED) continue;
    if (!s.ok()) return ::testing::AssertionFailure() << "probe: " << Describe(s);
  }
  return ::testing::AssertionFailure() << "model " << model << " never got busy";
}

TEST(ClickdIsolation, BusyModelFreezesNeitherOtherModelsNorHealthNorGetModel) {
  // Two digests of A wait at once below (--max_concurrent_digests is 1 by
  // default).
  auto server = StartServer(LongUpdateFlags({"--max_concurrent_digests=2"}));
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("a", {{"user", "ad", "site"}})).ok());
  ASSERT_TRUE(client.CreateModel(ModelWith("b", {})).ok());

  std::atomic<bool> update_done{false};
  auto update = StartLongUpdate(*server, "a", &update_done);
  ASSERT_TRUE(WaitUntilBusy(*server, "a"));
  // A GetModel with the state digest of A waits for A's learner (on the
  // executor, not on a gRPC thread).
  std::atomic<bool> digest_done{false};
  auto digest = std::async(std::launch::async, [&] {
    Client c(*server);
    v1::ModelInfo info;
    const grpc::Status status = c.GetModel("a", true, &info);
    digest_done = true;
    return status;
  });

  v1::Example ad;
  AddNamespace(&ad, "ad", 3);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(client.Predict(PredictOf("b", {}, ad)).ok());
    auto health = CheckHealth(server->NewChannel());
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, HealthCheckResponse::SERVING);
    v1::ModelInfo info;
    ASSERT_TRUE(client.GetModel("a", false, &info).ok());
    ASSERT_TRUE(client.Predict(PredictOf("a", {}, ad)).ok());
  }
  // A digest of A with a short deadline cannot be computed before A's
  // update ends, and is answered DEADLINE_EXCEEDED anyway.
  {
    auto stub = server->NewStub();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(500));
    v1::GetModelRequest request;
    request.set_model("a");
    request.set_state_digest(true);
    v1::GetModelResponse response;
    const grpc::Status status = stub->GetModel(&context, request, &response);
    EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << Describe(status);
  }
  // Everything above was answered while A's update was still running, and
  // the digest, which waits for it, was not.
  EXPECT_FALSE(update_done) << "the long update ended too soon for this test to mean anything";
  EXPECT_FALSE(digest_done);

  // SIGTERM stops the server within its grace despite the running learn.
  EXPECT_TRUE(ExitsCleanlyOnSigterm(*server));
  update.wait();
  digest.wait();
}

TEST(ClickdIsolation, SigtermWhileAModelIsBusyExitsWithinTheGrace) {
  auto server = StartServer(LongUpdateFlags());
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("a", {{"user", "ad", "site"}})).ok());
  std::atomic<bool> update_done{false};
  auto update = StartLongUpdate(*server, "a", &update_done);
  ASSERT_TRUE(WaitUntilBusy(*server, "a"));
  // A second long Update of A waits in A's queue, holding no worker.
  std::atomic<bool> queued_done{false};
  auto queued = StartLongUpdate(*server, "a", &queued_done);
  ASSERT_FALSE(update_done) << "the long update ended too soon for this test to mean anything";

  const auto signalled = Clock::now();
  server->Signal(SIGTERM);
  const auto exit = server->WaitForExit(seconds(30));
  ASSERT_TRUE(exit.has_value()) << "clickd did not exit within 30 s of SIGTERM (grace 2 s)";
  const double seconds_to_exit = std::chrono::duration<double>(Clock::now() - signalled).count();
  EXPECT_EQ(exit->ToString(), "exit 0") << server->Output();
  std::cout << "exited " << seconds_to_exit << " s after SIGTERM\n";
  // The long calls never completed: the process went first.
  const grpc::Status first = update.get();
  const grpc::Status second = queued.get();
  EXPECT_FALSE(first.ok());
  EXPECT_FALSE(second.ok());
  EXPECT_TRUE(second.error_code() == StatusCode::UNAVAILABLE ||
              second.error_code() == StatusCode::CANCELLED)
      << Describe(second);
}

TEST(ClickdIsolation, FullQueueIsRefusedAtOnce) {
  // Small Predicts are scored on gRPC's threads and never queue
  // (--max_inline_predict_features): send every Predict to the executor here.
  auto server =
      StartServer(LongUpdateFlags({"--max_queued_calls=1", "--max_inline_predict_features=0"}));
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("a", {{"user", "ad", "site"}})).ok());
  std::atomic<bool> update_done{false};
  auto update = StartLongUpdate(*server, "a", &update_done);
  // The probe that finds A busy stays queued: the queue (of one) is full.
  ASSERT_TRUE(WaitUntilBusy(*server, "a"));
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("a", Cube(2), 1)),
                                  "server overloaded: 1 calls queued; the limit is 1"));
  v1::Example ad;
  AddNamespace(&ad, "ad", 3);
  EXPECT_TRUE(IsResourceExhausted(client.Predict(PredictOf("a", {}, ad)),
                                  "server overloaded: 1 calls queued; the limit is 1"));
  EXPECT_FALSE(update_done) << "the long update ended too soon for this test to mean anything";
  EXPECT_TRUE(ExitsCleanlyOnSigterm(*server));
  update.wait();
}

// A Predict above --max_inline_predict_features is scored on the gRPC
// thread only while the workers are idle (server/inline_lease.h): under
// load it queues for them like any other work, so with the queue full it is
// refused, while a small Predict is still scored at once.
TEST(ClickdIsolation, LargePredictTakesTheWorkersWhileTheyAreBusy) {
  auto server = StartServer(LongUpdateFlags({"--max_queued_calls=1"}));
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("a", {{"user", "ad", "site"}})).ok());
  v1::Example small_ad, large_ad;
  AddNamespace(&small_ad, "ad", 3);
  AddNamespace(&large_ad, "ad", 3000);  // above the 1024 always scored inline
  // Idle workers: answered (on the gRPC thread).
  const grpc::Status quiet = client.Predict(PredictOf("a", {}, large_ad));
  EXPECT_TRUE(quiet.ok()) << Describe(quiet);
  std::atomic<bool> update_done{false};
  auto update = StartLongUpdate(*server, "a", &update_done);
  ASSERT_TRUE(WaitUntilBusy(*server, "a"));
  EXPECT_TRUE(IsResourceExhausted(client.Predict(PredictOf("a", {}, large_ad)),
                                  "server overloaded: 1 calls queued; the limit is 1"));
  EXPECT_TRUE(client.Predict(PredictOf("a", {}, small_ad)).ok());
  EXPECT_FALSE(update_done) << "the long update ended too soon for this test to mean anything";
  EXPECT_TRUE(ExitsCleanlyOnSigterm(*server));
  update.wait();
}

// A small Update or stream message on a memory-only model is learned on the
// gRPC thread that received it (ClickdService::PlaceUpdate), so it needs no
// worker and no place in the queue; one on a model that a long call learns
// on is not (it would wait there for that call), and queues for the workers
// like any other learner: with the queue full, it is refused.
TEST(ClickdIsolation, SmallUpdatesLearnHereUnlessALongCallLearnsOnTheModel) {
  auto server = StartServer(LongUpdateFlags({"--max_queued_calls=1"}));
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("a", {{"user", "ad", "site"}})).ok());
  ASSERT_TRUE(client.CreateModel(ModelWith("b", {})).ok());
  std::atomic<bool> update_done{false};
  auto update = StartLongUpdate(*server, "a", &update_done);
  // The probe that finds A busy stays queued: the queue (of one) is full.
  ASSERT_TRUE(WaitUntilBusy(*server, "a"));
  auto stream_into = [&server](const std::string& model, v1::UpdateStreamResponse* summary) {
    auto stub = server->NewStub();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    auto stream = stub->UpdateStream(&context, summary);
    for (int i = 0; i < 3; ++i) {
      if (!stream->Write(UpdateOf(model, Cube(2), 4))) break;
    }
    stream->WritesDone();
    return stream->Finish();
  };
  v1::UpdateStreamResponse summary;
  const grpc::Status into_b = stream_into("b", &summary);
  EXPECT_TRUE(into_b.ok()) << Describe(into_b);
  EXPECT_EQ(summary.applied(), 12u);
  EXPECT_TRUE(IsResourceExhausted(stream_into("a", &summary),
                                  "message 0 (0 examples applied before it): server overloaded: "
                                  "1 calls queued; the limit is 1"));
  const grpc::Status unary_into_b = client.Update(UpdateOf("b", Cube(2), 3));
  EXPECT_TRUE(unary_into_b.ok()) << Describe(unary_into_b);
  EXPECT_TRUE(IsResourceExhausted(client.Update(UpdateOf("a", Cube(2), 3)),
                                  "server overloaded: 1 calls queued; the limit is 1"));
  EXPECT_FALSE(update_done) << "the long update ended too soon for this test to mean anything";
  EXPECT_TRUE(ExitsCleanlyOnSigterm(*server));
  update.wait();
}

// Streams open at once are bounded server-wide (--max_open_streams): one
// beyond the limit, of any streaming method, is refused when it opens, and
// the place is free again once a stream ends. Unary calls go on.
TEST(ClickdIsolation, OpenStreamsAreBoundedServerWide) {
  auto server = StartServer({"--max_open_streams=2"});
  ASSERT_NE(server, nullptr);
  Client client(*server);
  ASSERT_TRUE(client.CreateModel(ModelWith("b", {})).ok());
  auto stub = server->NewStub();
  // Two acked streams, each open on the server (its first ack came back).
  struct Held {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::UpdateRequest, v1::UpdateAck>> stream;
  };
  std::vector<std::unique_ptr<Held>> held;
  for (int i = 0; i < 2; ++i) {
    auto h = std::make_unique<Held>();
    h->context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    h->stream = stub->UpdateStreamAcked(&h->context);
    v1::UpdateAck ack;
    ASSERT_TRUE(h->stream->Write(UpdateOf("b", Cube(2), 2)));
    ASSERT_TRUE(h->stream->Read(&ack));
    held.push_back(std::move(h));
  }
  auto one_message_stream = [&stub] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    v1::UpdateStreamResponse summary;
    auto stream = stub->UpdateStream(&context, &summary);
    stream->Write(UpdateOf("b", Cube(2), 2));
    stream->WritesDone();
    return stream->Finish();
  };
  EXPECT_TRUE(IsResourceExhausted(one_message_stream(),
                                  "UpdateStream: too many open streams: 2 are open; the limit is 2 "
                                  "(max_open_streams)"));
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    auto feedback = stub->FeedbackStream(&context);
    feedback->WritesDone();
    EXPECT_TRUE(IsResourceExhausted(feedback->Finish(), "FeedbackStream: too many open streams"));
  }
  EXPECT_TRUE(client.Update(UpdateOf("b", Cube(2), 1)).ok());
  // One held stream ends: its place is free once the server is done with
  // it (OnDone may follow the client's Finish by a moment: bounded retry).
  held[0]->stream->WritesDone();
  ASSERT_TRUE(held[0]->stream->Finish().ok());
  grpc::Status after = one_message_stream();
  for (int attempt = 0; attempt < 100 && after.error_code() == StatusCode::RESOURCE_EXHAUSTED;
       ++attempt) {
    std::this_thread::sleep_for(milliseconds(20));
    after = one_message_stream();
  }
  EXPECT_TRUE(after.ok()) << Describe(after);
  held[1]->stream->WritesDone();
  EXPECT_TRUE(held[1]->stream->Finish().ok());
  v1::ModelInfo info;
  ASSERT_TRUE(client.GetModel("b", false, &info).ok());
  EXPECT_EQ(info.updates(), 2u + 2 + 1 + 2);
  EXPECT_EQ(server->Stop().ToString(), "exit 0") << server->Output();
}

}  // namespace
}  // namespace clickd
