// Tests ClickdClient against an in-process fake service that counts calls
// and fails on demand, and against a port where nothing listens. No test
// depends on how long anything takes: sleeps go through a recording fake,
// and attempts are counted by the server or by a client interceptor.
#include "client/clickd_client.h"

#include <arpa/inet.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/client_interceptor.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "wire/predict_request.h"

namespace clickd {
namespace {

// A Clickd service whose Predict and Update fail with a chosen code a
// chosen number of times, counting every call it receives.
class FakeClickd final : public v1::Clickd::Service {
 public:
  std::atomic<int> predict_failures{0};  // how many Predicts fail before success
  std::atomic<int> update_failures{0};
  std::atomic<int> feedback_failures{0};
  grpc::StatusCode failure_code = grpc::StatusCode::UNAVAILABLE;
  std::atomic<int> predicts{0}, updates{0}, feedbacks{0};
  std::atomic<int64_t> get_model_deadline_ms{0};  // from epoch, as seen by the server

  grpc::Status Predict(grpc::ServerContext*, const v1::PredictRequest* request,
                       v1::PredictResponse* response) override {
    ++predicts;
    if (predict_failures.fetch_sub(1) > 0) return grpc::Status(failure_code, "fake failure");
    response->set_request_id(request->request_id());
    response->set_model_version(42);
    for (int i = 0; i < request->candidates_size(); ++i) {
      response->add_predictions()->set_prediction(0.25 * (i + 1));
    }
    return grpc::Status::OK;
  }

  grpc::Status Update(grpc::ServerContext*, const v1::UpdateRequest* request,
                      v1::UpdateResponse* response) override {
    ++updates;
    if (update_failures.fetch_sub(1) > 0) return grpc::Status(failure_code, "fake failure");
    response->set_applied(request->examples_size());
    return grpc::Status::OK;
  }

  // Joins every item.
  grpc::Status Feedback(grpc::ServerContext*, const v1::FeedbackRequest* request,
                        v1::FeedbackResponse* response) override {
    ++feedbacks;
    if (feedback_failures.fetch_sub(1) > 0) return grpc::Status(failure_code, "fake failure");
    for (int i = 0; i < request->items_size(); ++i) response->add_statuses(v1::FEEDBACK_JOINED);
    response->set_joined(request->items_size());
    return grpc::Status::OK;
  }

  // Sums the examples; a message with request_id "bad" ends the stream.
  grpc::Status UpdateStream(grpc::ServerContext*, grpc::ServerReader<v1::UpdateRequest>* reader,
                            v1::UpdateStreamResponse* response) override {
    v1::UpdateRequest request;
    while (reader->Read(&request)) {
      if (request.request_id() == "bad") {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad message");
      }
      response->set_requests(response->requests() + 1);
      response->set_applied(response->applied() + request.examples_size());
    }
    return grpc::Status::OK;
  }

  grpc::Status GetModel(grpc::ServerContext* context, const v1::GetModelRequest* request,
                        v1::GetModelResponse* response) override {
    get_model_deadline_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                context->deadline().time_since_epoch())
                                .count();
    if (request->model() != "default") return grpc::Status(grpc::StatusCode::NOT_FOUND, "no");
    response->mutable_model()->mutable_config()->set_name("default");
    return grpc::Status::OK;
  }
};

// Serves a FakeClickd on 127.0.0.1 at a port the kernel picks.
class FakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  // A client whose backoff sleeps are recorded instead of slept.
  std::unique_ptr<ClickdClient> Client(ClientOptions options = {}) {
    options.sleep = [this](absl::Duration d) {
      std::lock_guard<std::mutex> lock(sleeps_mu_);
      sleeps_.push_back(d);
    };
    auto client = ClickdClient::Create(absl::StrCat("127.0.0.1:", port_), options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::vector<absl::Duration> Sleeps() {
    std::lock_guard<std::mutex> lock(sleeps_mu_);
    return sleeps_;
  }

  static v1::PredictRequest TwoCandidates() {
    v1::PredictRequest request;
    request.set_model("default");
    request.set_request_id("r1");
    request.add_candidates();
    request.add_candidates();
    return request;
  }

  FakeClickd fake_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::mutex sleeps_mu_;
  std::vector<absl::Duration> sleeps_;
};

TEST(FromGrpcStatus, CodesMapOneToOne) {
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s = FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(code), "why"));
    EXPECT_EQ(static_cast<int>(s.code()), code);
    EXPECT_EQ(s.message(), "why");
  }
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "")).code(),
            absl::StatusCode::kNotFound);
}

TEST(ClickdClient, CreateRejectsBadOptions) {
  EXPECT_EQ(ClickdClient::Create("").status().code(), absl::StatusCode::kInvalidArgument);
  ClientOptions o;
  o.predict_retry.max_attempts = 0;
  EXPECT_EQ(ClickdClient::Create("127.0.0.1:1", o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = ClientOptions{};
  o.predict_retry.multiplier = 0.5;
  EXPECT_FALSE(ClickdClient::Create("127.0.0.1:1", o).ok());
  o = ClientOptions{};
  o.timeout = absl::ZeroDuration();
  EXPECT_FALSE(ClickdClient::Create("127.0.0.1:1", o).ok());
  o = ClientOptions{};
  o.predict_retry.jitter = 1.5;
  EXPECT_FALSE(ClickdClient::Create("127.0.0.1:1", o).ok());
}

TEST_F(FakeServerTest, PredictRetriesUnavailableWithJitteredExponentialBackoff) {
  fake_.predict_failures = 2;
  auto client = Client();  // 3 attempts, 50 ms doubling, jitter 0.2
  auto response = client->Predict(TwoCandidates());
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->request_id(), "r1");
  ASSERT_EQ(response->predictions_size(), 2);
  EXPECT_EQ(response->predictions(1).prediction(), 0.5);
  EXPECT_EQ(fake_.predicts, 3);
  const std::vector<absl::Duration> sleeps = Sleeps();
  ASSERT_EQ(sleeps.size(), 2u);
  EXPECT_GE(sleeps[0], absl::Milliseconds(40));
  EXPECT_LE(sleeps[0], absl::Milliseconds(60));
  EXPECT_GE(sleeps[1], absl::Milliseconds(80));
  EXPECT_LE(sleeps[1], absl::Milliseconds(120));
}

TEST_F(FakeServerTest, PredictGivesUpAfterMaxAttempts) {
  fake_.predict_failures = 1000;
  ClientOptions o;
  o.predict_retry.max_attempts = 4;
  o.predict_retry.max_backoff = absl::Milliseconds(60);
  auto client = Client(o);
  const absl::Status s = client->Predict(TwoCandidates()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(fake_.predicts, 4);
  const std::vector<absl::Duration> sleeps = Sleeps();
  ASSERT_EQ(sleeps.size(), 3u);
  EXPECT_LE(sleeps[2], absl::Milliseconds(60) * 1.2);  // capped by max_backoff
}

TEST_F(FakeServerTest, PredictRetriesOnlyUnavailable) {
  fake_.predict_failures = 1;
  fake_.failure_code = grpc::StatusCode::INVALID_ARGUMENT;
  auto client = Client();
  EXPECT_EQ(client->Predict(TwoCandidates()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_.predicts, 1);
  EXPECT_TRUE(Sleeps().empty());
}

TEST_F(FakeServerTest, RetriesStopWhenTheBackoffWouldPassTheDeadline) {
  fake_.predict_failures = 1000;
  ClientOptions o;
  o.predict_retry.initial_backoff = absl::Seconds(100);
  o.predict_retry.max_backoff = absl::Seconds(100);
  auto client = Client(o);  // timeout 5 s: no room for an 80..120 s sleep
  EXPECT_EQ(client->Predict(TwoCandidates()).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake_.predicts, 1);
  EXPECT_TRUE(Sleeps().empty());
}

TEST_F(FakeServerTest, UpdateIsNeverRetried) {
  fake_.update_failures = 1;
  auto client = Client();
  v1::UpdateRequest request;
  request.set_model("default");
  request.add_examples();
  EXPECT_EQ(client->Update(request).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake_.updates, 1);
  EXPECT_TRUE(Sleeps().empty());
  auto ok = client->Update(request);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->applied(), 1u);
}

// With an idempotency key a retry cannot teach the model twice (the server
// answers duplicate): UNAVAILABLE and DEADLINE_EXCEEDED are retried.
TEST_F(FakeServerTest, UpdateWithAKeyRetriesUnavailableAndDeadline) {
  auto client = Client();
  v1::UpdateRequest request;
  request.set_model("default");
  request.set_idempotency_key("batch-1");
  request.add_examples();
  fake_.update_failures = 2;
  auto ok = client->Update(request);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(fake_.updates, 3);
  EXPECT_EQ(Sleeps().size(), 2u);
  fake_.failure_code = grpc::StatusCode::DEADLINE_EXCEEDED;
  fake_.update_failures = 1;
  ASSERT_TRUE(client->Update(request).ok());
  EXPECT_EQ(fake_.updates, 5);
  fake_.failure_code = grpc::StatusCode::INVALID_ARGUMENT;
  fake_.update_failures = 1;
  EXPECT_EQ(client->Update(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_.updates, 6);
}

TEST_F(FakeServerTest, PredictThatLogsImpressionsIsNeverRetried) {
  fake_.predict_failures = 1;
  auto client = Client();
  v1::PredictRequest request = TwoCandidates();
  request.set_log_impressions(true);
  EXPECT_EQ(client->Predict(request).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fake_.predicts, 1);
  EXPECT_TRUE(Sleeps().empty());
  ASSERT_TRUE(client->Predict(request).ok());
}

TEST_F(FakeServerTest, FeedbackRetriesUnavailableOnly) {
  fake_.feedback_failures = 2;
  auto client = Client();
  v1::FeedbackRequest request;
  request.set_model("default");
  request.add_items()->set_impression_id(7);
  auto response = client->Feedback(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->joined(), 1u);
  EXPECT_EQ(fake_.feedbacks, 3);
  EXPECT_EQ(Sleeps().size(), 2u);
  fake_.feedback_failures = 1;
  fake_.failure_code = grpc::StatusCode::INVALID_ARGUMENT;
  EXPECT_EQ(client->Feedback(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_.feedbacks, 4);
}

TEST_F(FakeServerTest, EveryCallHasADeadlineAndCallsCanOverrideIt) {
  auto client = Client();  // default timeout: 5 s
  auto deadline_ms = [&](const CallOptions& call) {
    const int64_t start = absl::ToUnixMillis(absl::Now());
    EXPECT_TRUE(client->GetModel("default", call).ok());
    return fake_.get_model_deadline_ms.load() - start;
  };
  const int64_t by_default = deadline_ms({});
  EXPECT_GT(by_default, 0);
  EXPECT_LT(by_default, 60'000);  // finite: not gRPC's infinite default
  CallOptions hour;
  hour.timeout = absl::Hours(1);
  EXPECT_GT(deadline_ms(hour), 1'800'000);
  EXPECT_EQ(client->GetModel("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(FakeServerTest, PredictAsyncRunsTheCallbackOnceWithTheResult) {
  auto client = Client();
  for (const int failures : {0, 1}) {
    fake_.predict_failures = failures;
    std::promise<absl::StatusOr<v1::PredictResponse>> promise;
    std::future<absl::StatusOr<v1::PredictResponse>> result = promise.get_future();
    client->PredictAsync(TwoCandidates(), [&promise](absl::StatusOr<v1::PredictResponse> r) {
      promise.set_value(std::move(r));
    });
    ASSERT_EQ(result.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    const absl::StatusOr<v1::PredictResponse> r = result.get();
    if (failures == 0) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->model_version(), 42u);
      EXPECT_EQ(r->predictions_size(), 2);
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);  // one attempt only
    }
  }
  EXPECT_EQ(fake_.predicts, 2);
}

TEST_F(FakeServerTest, ManyAsyncPredictsAllComplete) {
  auto client = Client();
  constexpr int kCalls = 200;
  std::atomic<int> ok{0};
  std::promise<void> all_done;
  std::atomic<int> remaining{kCalls};
  for (int i = 0; i < kCalls; ++i) {
    client->PredictAsync(TwoCandidates(), [&](absl::StatusOr<v1::PredictResponse> r) {
      if (r.ok()) ++ok;
      if (--remaining == 0) all_done.set_value();
    });
  }
  ASSERT_EQ(all_done.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(ok, kCalls);
  client.reset();  // waits for callbacks to return: nothing may touch it afterwards
}

TEST_F(FakeServerTest, UpdateStreamReturnsTheSummary) {
  auto client = Client();
  auto stream = client->OpenUpdateStream();
  v1::UpdateRequest request;
  request.set_model("default");
  request.add_examples();
  request.add_examples();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Write(request));
  auto summary = stream->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->requests(), 3u);
  EXPECT_EQ(summary->applied(), 6u);
  EXPECT_EQ(stream->Finish().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(FakeServerTest, UpdateStreamReportsTheServersError) {
  auto client = Client();
  auto stream = client->OpenUpdateStream();
  v1::UpdateRequest request;
  request.set_request_id("bad");
  // The server may end the stream before or after this write is accepted;
  // either way Finish has its status.
  stream->Write(request);
  EXPECT_EQ(stream->Finish().status().code(), absl::StatusCode::kInvalidArgument);
  auto abandoned = client->OpenUpdateStream();  // destroyed unfinished: cancelled
  abandoned->Write(v1::UpdateRequest());
}

// Counts the calls that start on a channel, per method.
class CountingInterceptor : public grpc::experimental::Interceptor {
 public:
  CountingInterceptor(grpc::experimental::ClientRpcInfo* info, std::atomic<int>* predicts,
                      std::atomic<int>* updates)
      : method_(info->method()), predicts_(predicts), updates_(updates) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      if (method_ == "/clickd.v1.Clickd/Predict") ++*predicts_;
      if (method_ == "/clickd.v1.Clickd/Update") ++*updates_;
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  std::atomic<int>* const predicts_;
  std::atomic<int>* const updates_;
};

class CountingFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  CountingFactory(std::atomic<int>* predicts, std::atomic<int>* updates)
      : predicts_(predicts), updates_(updates) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new CountingInterceptor(info, predicts_, updates_);
  }

 private:
  std::atomic<int>* const predicts_;
  std::atomic<int>* const updates_;
};

TEST(ClickdClient, NothingListeningIsUnavailableAfterTheConfiguredAttempts) {
  // A socket bound to a loopback port but not listening: connecting to it
  // is refused, and no other process can take the port meanwhile.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string target = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));

  std::atomic<int> predicts{0}, updates{0};
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<CountingFactory>(&predicts, &updates));
  auto channel = grpc::experimental::CreateCustomChannelWithInterceptors(
      target, grpc::InsecureChannelCredentials(), grpc::ChannelArguments(), std::move(factories));
  ClientOptions options;
  options.predict_retry.max_attempts = 3;
  options.predict_retry.initial_backoff = absl::Milliseconds(10);
  options.timeout = absl::Seconds(20);
  auto client = ClickdClient::CreateWithChannel(channel, options);
  ASSERT_TRUE(client.ok()) << client.status();

  v1::PredictRequest predict;
  predict.set_model("default");
  predict.add_candidates();
  const absl::Status p = (*client)->Predict(predict).status();
  EXPECT_EQ(p.code(), absl::StatusCode::kUnavailable) << p;
  EXPECT_EQ(predicts, 3);

  v1::UpdateRequest update;
  update.set_model("default");
  update.add_examples();
  const absl::Status u = (*client)->Update(update).status();
  EXPECT_EQ(u.code(), absl::StatusCode::kUnavailable) << u;
  EXPECT_EQ(updates, 1);
  close(fd);
}

// A context and candidates with every form of feature, and values other
// than 1, crossed by the model below.
v1::PredictRequest MixedRequest() {
  v1::PredictRequest r;
  r.set_model("m");
  v1::Namespace* u = r.mutable_context()->add_namespaces();
  u->set_name("u");
  u->add_features()->set_name("country=FR");
  v1::Feature* f = u->add_features();
  f->set_id(42);
  f->set_value(0.5f);
  u->add_names("lang=fr");
  u->add_ids(9);
  u->add_id_values(-2);
  for (int i = 0; i < 3; ++i) {
    v1::Namespace* a = r.add_candidates()->add_namespaces();
    a->set_name("a");
    a->add_names(absl::StrCat("ad=", i));
    a->add_names("brand=x");
    a->add_values(1);
    a->add_values(0.25f * (i + 1));
    a->add_features()->set_id(i);
  }
  return r;
}

// Keys hashed by the client land where the server hashes names and ids:
// the same features, in the same order, after crosses, bias and folding.
TEST(KeyHasher, KeysHashAsTheServerHashes) {
  ModelConfig config;
  config.hashing.seed = 1234;
  config.hashing.bits = 18;
  config.hashing.interactions = {{"u", "a"}, {"u", "u"}};
  auto model = *CreateModel(config);
  const v1::PredictRequest r = MixedRequest();
  HashedCandidates want;
  ASSERT_TRUE(HashPredictRequest(r, *model, ExampleLimits{}, &want).ok());

  const KeyHasher hasher(1234);
  auto context = HashedPredictContext::Create(hasher, r.context());
  ASSERT_TRUE(context.ok()) << context.status();
  const v1::Namespace& u = context->context().namespaces(0);
  EXPECT_EQ(u.name(), "u");
  ASSERT_EQ(u.keys_size(), 4);
  EXPECT_EQ(u.keys(0), hasher.NamedKey(hasher.NamespaceHash("u"), "country=FR"));
  EXPECT_EQ(u.keys(1), hasher.IdKey(hasher.NamespaceHash("u"), 42));
  EXPECT_EQ(std::vector<float>(u.key_values().begin(), u.key_values().end()),
            (std::vector<float>{1, 0.5f, 1, -2}));
  EXPECT_EQ(u.features_size() + u.names_size() + u.ids_size(), 0);

  for (int reuse = 0; reuse < 2; ++reuse) {  // the context serves many requests
    auto hashed = context->Request(r);
    ASSERT_TRUE(hashed.ok()) << hashed.status();
    EXPECT_EQ(hashed->model(), "m");
    HashedCandidates got;
    ASSERT_TRUE(HashPredictRequest(*hashed, *model, ExampleLimits{}, &got).ok());
    EXPECT_EQ(got.context.features, want.context.features);
    EXPECT_EQ(got.features, want.features);
    EXPECT_EQ(got.ends, want.ends);
  }
  // Another seed, other keys.
  auto other = HashedPredictContext::Create(KeyHasher(1235), r.context());
  EXPECT_NE(other->context().namespaces(0).keys(0), u.keys(0));
  v1::ModelInfo info;
  info.mutable_config()->mutable_hashing()->set_seed(1234);
  EXPECT_EQ(KeyHasher::ForModel(info).seed(), 1234u);
}

// The golden vectors of docs/hashing.md, from tests/data/hashing_golden.json
// (the one copy every language's tests read): the rows a client hashes itself,
// namespaces and unfolded named or pre-hashed features.
TEST(KeyHasher, GoldenVectors) {
  std::ifstream in(CLICKD_HASHING_GOLDEN);
  ASSERT_TRUE(in.good()) << "cannot open " << CLICKD_HASHING_GOLDEN;
  const nlohmann::json doc = nlohmann::json::parse(in);
  int checked = 0;
  for (const nlohmann::json& row : doc.at("vectors")) {
    const std::string kind = row.at("kind").get<std::string>();
    if ((kind != "namespace" && kind != "feature") || row.contains("bits")) continue;
    const KeyHasher hasher(row.at("seed").get<uint64_t>());
    const uint64_t want = std::stoull(row.at("key").get<std::string>(), nullptr, 16);
    const uint64_t ns = hasher.NamespaceHash(row.at("namespace").get<std::string>());
    uint64_t got = ns;
    if (kind == "feature") {
      got = row.contains("id") ? KeyHasher::IdKey(ns, row.at("id").get<uint64_t>())
                               : KeyHasher::NamedKey(ns, row.at("name").get<std::string>());
    }
    EXPECT_EQ(got, want) << row.dump();
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST(KeyHasher, AllOnesLeaveKeyValuesEmptyAndKeysStay) {
  v1::Example e;
  v1::Namespace* ns = e.add_namespaces();
  ns->set_name("n");
  ns->add_names("a");
  ns->add_keys(77);
  e.add_dense()->set_namespace_("emb");
  auto hashed = KeyHasher(0).Hash(e);
  ASSERT_TRUE(hashed.ok());
  EXPECT_EQ(hashed->namespaces(0).keys_size(), 2);
  EXPECT_EQ(hashed->namespaces(0).keys(1), 77u);
  EXPECT_EQ(hashed->namespaces(0).key_values_size(), 0);
  EXPECT_EQ(hashed->dense_size(), 1);
}

TEST(KeyHasher, RefusesWhatCannotBeKeyed) {
  const KeyHasher hasher(0);
  v1::Example e;
  v1::Namespace* ns = e.add_namespaces();
  ns->add_features()->set_value(2);
  EXPECT_EQ(hasher.Hash(e).status().message(), "namespaces[0].features[0] has neither name nor id");
  ns->mutable_features(0)->set_name("");
  EXPECT_EQ(hasher.Hash(e).status().message(), "namespaces[0].features[0].name is empty");
  ns->clear_features();
  ns->add_names("a");
  ns->add_values(1);
  ns->add_values(2);
  EXPECT_EQ(hasher.Hash(e).status().message(), "namespaces[0].values: 2 values for 1 names");
  ns->clear_values();
  ns->add_names("");
  EXPECT_EQ(hasher.Hash(e).status().message(), "namespaces[0].names[1] is empty");
  ns->clear_names();
  ns->add_ids(1);
  ns->add_id_values(1);
  ns->add_id_values(1);
  EXPECT_EQ(hasher.Hash(e).status().message(), "namespaces[0].id_values: 2 values for 1 ids");
  ns->clear_id_values();
  ns->add_key_values(1);
  EXPECT_EQ(hasher.Hash(e).status().code(), absl::StatusCode::kInvalidArgument);
  auto context = HashedPredictContext::Create(hasher, e);
  EXPECT_EQ(context.status().message(), "context.namespaces[0].key_values: 1 values for 0 keys");
  auto ok = HashedPredictContext::Create(hasher, v1::Example());
  v1::PredictRequest r;
  *r.add_candidates() = e;
  EXPECT_EQ(ok->Request(r).status().message(),
            "candidates[0].namespaces[0].key_values: 1 values for 0 keys");
}

}  // namespace
}  // namespace clickd
