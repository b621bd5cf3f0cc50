// Untrusted callers against the real clickd binary (issue 10): limits on
// the process (models per process, interaction lists), what a deleted model
// leaves behind (nothing: no directory, no metric series), the codes and
// messages callers get (unparsable requests, huge names, server paths) and
// flags checked at startup. Each test starts its own server on a free port
// of 127.0.0.1 and stops it by PID; every loop is bounded, and no assertion
// depends on how fast anything runs.
#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::FindFreePort;
using ::clickd::testing::RunClickd;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using ::grpc::StatusCode;

const bool kFastIdlePolling =
    setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "50", /*overwrite=*/0) == 0;

constexpr auto kCallTimeout = std::chrono::seconds(20);

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  return context;
}

std::string NewDataDir(const std::string& tag) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/untrusted_", tag, "_", getpid(), "_",
                                       std::chrono::steady_clock::now().time_since_epoch().count());
  std::filesystem::remove_all(dir);
  return dir;
}

std::unique_ptr<ServerProcess> Start(std::vector<std::string> flags) {
  ServerOptions options;
  options.flags = std::move(flags);
  auto server = ServerProcess::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

grpc::Status CreateModel(v1::Clickd::Stub& stub, const v1::ModelConfig& config) {
  v1::CreateModelRequest request;
  *request.mutable_config() = config;
  v1::CreateModelResponse response;
  return stub.CreateModel(Context().get(), request, &response);
}

v1::ModelConfig Named(const std::string& name) {
  v1::ModelConfig config;
  config.set_name(name);
  return config;
}

std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(20);
  auto response = client.Get("/metrics");
  EXPECT_TRUE(response) << httplib::to_string(response.error());
  return response ? response->body : std::string();
}

TEST(ProcessLimits, ModelsPerProcess) {
  auto server = Start({"--max_models=3"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  // "default" is the first of the three.
  ASSERT_TRUE(CreateModel(*stub, Named("a")).ok());
  ASSERT_TRUE(CreateModel(*stub, Named("b")).ok());
  const grpc::Status refused = CreateModel(*stub, Named("c"));
  EXPECT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(), "the server holds 3 models; the limit is 3 (--max_models)");
  v1::DeleteModelRequest del;
  del.set_model("a");
  v1::DeleteModelResponse deleted;
  ASSERT_TRUE(stub->DeleteModel(Context().get(), del, &deleted).ok());
  EXPECT_TRUE(CreateModel(*stub, Named("c")).ok());
}

// What a config commits at CreateModel, before the model learns anything,
// is bounded in bytes (issue 33, N9): admission.counters = 2^32 asked for
// 8 GiB of counters, and the compact encoding's tables cost ~6 MB per
// store before the first coordinate.
TEST(ProcessLimits, AModelsFixedMemoryIsBounded) {
  auto server = Start({"--max_model_fixed_bytes=4194304"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  v1::ModelConfig counters = Named("counters");
  counters.mutable_admission()->set_min_count(2);
  counters.mutable_admission()->set_counters(uint64_t{1} << 32);
  const grpc::Status refused = CreateModel(*stub, counters);
  EXPECT_EQ(refused.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused.error_message(),
            "config.admission.counters is 4294967296: the model would commit 8589934592 bytes at "
            "creation (its 1 store(s): the primary and each variant); the limit on a model's "
            "fixed memory is --max_model_fixed_bytes 4194304");
  counters.mutable_admission()->set_counters(uint64_t{1} << 20);  // 2 MiB
  EXPECT_TRUE(CreateModel(*stub, counters).ok());

  v1::ModelConfig compact = Named("compact");
  compact.mutable_memory()->set_encoding(v1::STATE_ENCODING_COMPACT);
  const grpc::Status tables = CreateModel(*stub, compact);
  EXPECT_EQ(tables.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(tables.error_message().find("--max_model_fixed_bytes 4194304"), std::string::npos)
      << tables.error_message();
  EXPECT_NE(tables.error_message().find("config.num_shards is 16"), std::string::npos)
      << tables.error_message();
  v1::ListModelsResponse listed;
  ASSERT_TRUE(stub->ListModels(Context().get(), v1::ListModelsRequest(), &listed).ok());
  EXPECT_EQ(listed.models_size(), 2);  // default and counters
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// A dense learner's matrices count too (issue 33, N9): ada_fd's sketch is
// 2 x tau x d doubles, so tau 65536 at d 65536 (64 GiB, which validated and
// then ran out of memory) is refused naming dense_optimizer.tau; tau 10 at
// d 1024 (160 KB) is created.
TEST(ProcessLimits, ADenseLearnersMatricesAreCounted) {
  auto server = Start({"--max_model_fixed_bytes=4194304"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  const auto sketch = [](uint32_t dim, uint32_t tau) {
    v1::ModelConfig c = Named(absl::StrCat("fd", dim, "_", tau));
    auto* emb = c.add_dense_namespaces();
    emb->set_name("emb");
    emb->set_dim(dim);
    c.set_dense_optimizer("ada_fd");
    c.mutable_dense()->set_tau(tau);
    return c;
  };
  // 512 x 4096 x 2 doubles: 32 MiB, over 4 MiB.
  const grpc::Status refused = CreateModel(*stub, sketch(4096, 512));
  EXPECT_EQ(refused.error_code(), StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("config.dense_optimizer.tau is 512: the model would "
                                         "commit 3"),
            std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("--max_model_fixed_bytes 4194304"), std::string::npos)
      << refused.error_message();
  const grpc::Status created = CreateModel(*stub, sketch(1024, 10));
  EXPECT_TRUE(created.ok()) << created.error_message();
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// The same bound holds for a model declared in --config (issue 33, N9):
// one over it stops the start (exit 2) naming the model, the field and the
// limit, before anything is allocated; at the limit it starts.
TEST(ProcessLimits, AConfiguredModelsFixedMemoryIsBoundedAtStartup) {
  const std::string dir = NewDataDir("fixed_config");
  std::filesystem::create_directories(dir);
  const auto config_of = [&](uint64_t counters) {
    const std::string path = absl::StrCat(dir, "/config_", counters, ".json");
    std::ofstream(path) << "{\"models\": [{\"name\": \"big\", \"admission\": "
                        << "{\"min_count\": 2, \"counters\": \"" << counters << "\"}}]}";
    return path;
  };
  // 8 MiB of counters: small enough that a server without the check
  // starts (and the test fails) without taking the machine's memory.
  const auto refused =
      RunClickd({"--config=" + config_of(uint64_t{1} << 22), "--max_model_fixed_bytes=4194304"});
  EXPECT_EQ(refused.status.ToString(), "exit 2") << refused.output;
  EXPECT_NE(refused.output.find(
                "--config: model \"big\": config.admission.counters is 4194304: the model "
                "would commit 8388608 bytes at creation"),
            std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("--max_model_fixed_bytes 4194304"), std::string::npos)
      << refused.output;
  auto server = Start({"--config=" + config_of(uint64_t{1} << 20),
                       "--max_model_fixed_bytes=4194304"});  // 2 MiB of counters
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// A stored model over the bound (created under a higher one) stops the
// start before it is allocated, naming the model, the field and the limit;
// raised again, the start restores it (issue 33, N9).
TEST(ProcessLimits, AStoredModelsFixedMemoryIsCheckedBeforeItIsRestored) {
  const std::string dir = NewDataDir("fixed_stored");
  {
    auto server = Start({"--data_dir=" + dir, "--default_model=false"});
    ASSERT_NE(server, nullptr);
    auto stub = server->NewStub();
    v1::ModelConfig counters = Named("big");
    counters.mutable_admission()->set_min_count(2);
    counters.mutable_admission()->set_counters(uint64_t{1} << 22);  // 8 MiB
    const grpc::Status created = CreateModel(*stub, counters);
    ASSERT_TRUE(created.ok()) << created.error_message();
    stub.reset();
    EXPECT_EQ(server->Stop().ToString(), "exit 0");
  }
  const auto refused =
      RunClickd({"--data_dir=" + dir, "--default_model=false", "--max_model_fixed_bytes=4194304"});
  EXPECT_NE(refused.status.ToString(), "exit 0") << refused.output;
  EXPECT_NE(refused.output.find("cannot restore model \"big\""), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("config.admission.counters is 4194304"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("--max_model_fixed_bytes 4194304"), std::string::npos)
      << refused.output;
  auto server = Start({"--data_dir=" + dir, "--default_model=false"});
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->Output().find("restored model \"big\""), std::string::npos) << server->Output();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// Each variant learns every example in a store of its own (issue 33, N9):
// an Update to a model with 8 variants costs 9 times its features, and
// is counted so against --max_features_per_request.
TEST(ProcessLimits, VariantsMultiplyARequestsCost) {
  auto server = Start({"--max_features_per_request=900", "--max_features_after_interactions=900"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  v1::ModelConfig config = Named("eight");
  for (int i = 0; i < 8; ++i) config.add_variants()->set_name(absl::StrCat("v", i));
  const grpc::Status created = CreateModel(*stub, config);
  ASSERT_TRUE(created.ok()) << created.error_message();
  auto update = [&](int features) {
    v1::UpdateRequest request;
    request.set_model("eight");
    auto* le = request.add_examples();
    auto* ns = le->mutable_example()->add_namespaces();
    ns->set_name("f");
    for (int j = 0; j < features; ++j) ns->add_features()->set_id(j);
    le->set_label(1);
    v1::UpdateResponse response;
    return stub->Update(Context().get(), request, &response);
  };
  const grpc::Status refused = update(150);  // 150 x 9 stores > 900
  EXPECT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_EQ(refused.error_message(),
            "the request's examples yield more than 100 features after interactions; each of the "
            "model's 9 stores (the primary and 8 variants) learns them all, and the limit, 900 "
            "(max_features_per_request), counts each store's");
  const grpc::Status learned = update(50);
  EXPECT_TRUE(learned.ok()) << learned.error_message();
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(ProcessLimits, InteractionListsAreBounded) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  v1::ModelConfig config = Named("crossed");
  for (int i = 0; i < 33; ++i) {
    v1::Interaction* x = config.mutable_hashing()->add_interactions();
    x->add_namespaces("user");
    x->add_namespaces("ad");
  }
  grpc::Status s = CreateModel(*stub, config);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "config.hashing.interactions has 33 entries; the limit is 32");
  config = Named("long_name");
  v1::Interaction* x = config.mutable_hashing()->add_interactions();
  x->add_namespaces("user");
  x->add_namespaces(std::string(1 << 20, 'n'));
  s = CreateModel(*stub, config);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "config.hashing.interactions[0][1] is 1048576 bytes long; must be 1..64");
}

// A deleted model leaves neither its directory nor its metric series.
TEST(ProcessLimits, DeletedModelsLeaveNothingBehind) {
  const std::string dir = NewDataDir("delete");
  auto port = FindFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  auto server = Start({"--data_dir=" + dir, absl::StrCat("--metrics_port=", *port)});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  ASSERT_TRUE(CreateModel(*stub, Named("doomed")).ok());
  v1::UpdateRequest update;
  update.set_model("doomed");
  v1::LabeledExample* e = update.add_examples();
  e->set_label(1);
  v1::Namespace* ns = e->mutable_example()->add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_name("x");
  v1::UpdateResponse updated;
  ASSERT_TRUE(stub->Update(Context().get(), update, &updated).ok());
  v1::SnapshotModelRequest snap;
  snap.set_model("doomed");
  v1::SnapshotModelResponse snapped;
  ASSERT_TRUE(stub->SnapshotModel(Context().get(), snap, &snapped).ok());
  EXPECT_NE(Scrape(*port).find("model=\"doomed\""), std::string::npos);

  v1::DeleteModelRequest del;
  del.set_model("doomed");
  v1::DeleteModelResponse deleted;
  ASSERT_TRUE(stub->DeleteModel(Context().get(), del, &deleted).ok());
  EXPECT_EQ(Scrape(*port).find("model=\"doomed\""), std::string::npos);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/models")) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"default"});
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
  std::filesystem::remove_all(dir);
}

// Bytes that no protobuf parser accepts: a varint 11 bytes long.
constexpr char kUnparsable[] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";

// Bytes that are not a clickd.v1 message: gRPC's own handler answered
// UNIMPLEMENTED with no message; clickd parses requests itself.
TEST(CallerErrors, UnparsableRequestsAreInvalidArgument) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  grpc::GenericStub generic(server->NewChannel());
  for (const char* method : {"/clickd.v1.Clickd/Predict", "/clickd.v1.Clickd/Update",
                             "/clickd.v1.Clickd/CreateModel", "/clickd.v1.Clickd/GetModel"}) {
    grpc::Slice slice(kUnparsable);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                      [&done](grpc::Status s) { done.set_value(s); });
    const grpc::Status status = done.get_future().get();
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_NE(status.error_message().find("is not a valid clickd.v1."), std::string::npos)
        << method << ": " << status.error_message();
  }
  auto stub = server->NewStub();
  v1::GetModelRequest get;
  get.set_model("default");
  v1::GetModelResponse got;
  EXPECT_TRUE(stub->GetModel(Context().get(), get, &got).ok());  // still serving
}

// Sends `messages` (raw bytes) on an UpdateStreamAcked call and returns its
// final status and how many acks came back.
class RawAckedStream : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `method` may also be UpdateStream (client streaming on the wire too):
  // its one summary counts as an ack.
  RawAckedStream(grpc::GenericStub* stub, std::vector<std::string> messages,
                 const char* method = "/clickd.v1.Clickd/UpdateStreamAcked")
      : messages_(std::move(messages)) {
    context_.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    stub->PrepareBidiStreamingCall(&context_, method, grpc::StubOptions(), this);
    StartRead(&ack_);
    WriteNext();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) WriteNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++acks_;
    StartRead(&ack_);
  }
  void OnDone(const grpc::Status& status) override { done_.set_value(status); }

  grpc::Status Await() { return done_.get_future().get(); }
  int acks() const { return acks_; }

 private:
  void WriteNext() {
    if (next_ == messages_.size()) {
      StartWritesDone();
      return;
    }
    grpc::Slice slice(messages_[next_++]);
    out_ = grpc::ByteBuffer(&slice, 1);
    StartWrite(&out_);
  }

  grpc::ClientContext context_;
  std::vector<std::string> messages_;
  size_t next_ = 0;
  grpc::ByteBuffer out_, ack_;
  std::atomic<int> acks_{0};
  std::promise<grpc::Status> done_;
};

// An unparsable message in a stream ended it as if the client had closed
// it (OK, fewer acks); now it is INVALID_ARGUMENT naming the message.
TEST(CallerErrors, UnparsableStreamMessageEndsTheStreamWithInvalidArgument) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  v1::UpdateRequest good;
  good.set_model("default");
  v1::LabeledExample* e = good.add_examples();
  e->set_label(1);
  v1::Namespace* ns = e->mutable_example()->add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_name("x");
  grpc::GenericStub generic(server->NewChannel());
  RawAckedStream stream(&generic,
                        {good.SerializeAsString(), kUnparsable, good.SerializeAsString()});
  const grpc::Status status = stream.Await();
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(),
            "message 1 (1 examples applied before it): the request is not a valid "
            "clickd.v1.UpdateRequest (11 bytes)");
  EXPECT_EQ(stream.acks(), 1);
}

// An unparsable UpdateStream message sent while the one before it is still
// being applied ends the stream at its own index, after everything before
// it was applied, and nothing after it is.
TEST(CallerErrors, UnparsableMessageReadAheadEndsTheStreamAfterTheOnesBefore) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  // Crossing `ad` with itself makes an apply (~450 crosses an example) far
  // slower than a parse, so the bad message is read while one is applied.
  v1::ModelConfig crossed = Named("crossed");
  v1::Interaction* cross = crossed.mutable_hashing()->add_interactions();
  cross->add_namespaces("ad");
  cross->add_namespaces("ad");
  ASSERT_TRUE(CreateModel(*stub, crossed).ok());
  v1::UpdateRequest good;
  good.set_model("crossed");
  for (int i = 0; i < 200; ++i) {
    v1::LabeledExample* e = good.add_examples();
    e->set_label(i % 2);
    v1::Namespace* ns = e->mutable_example()->add_namespaces();
    ns->set_name("ad");
    for (int f = 0; f < 30; ++f)
      ns->add_features()->set_name(absl::StrCat("f", (i * 31 + f) % 997));
  }
  std::vector<std::string> messages(30, good.SerializeAsString());
  messages.push_back(kUnparsable);
  for (int i = 0; i < 5; ++i) messages.push_back(good.SerializeAsString());
  grpc::GenericStub generic(server->NewChannel());
  RawAckedStream stream(&generic, messages, "/clickd.v1.Clickd/UpdateStream");
  const grpc::Status status = stream.Await();
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(status.error_message(),
            "message 30 (6000 examples applied before it): the request is not a valid "
            "clickd.v1.UpdateRequest (11 bytes)");
  EXPECT_EQ(stream.acks(), 0);
  v1::GetModelRequest get;
  get.set_model("crossed");
  v1::GetModelResponse got;
  ASSERT_TRUE(stub->GetModel(Context().get(), get, &got).ok());
  EXPECT_EQ(got.model().updates(), 6000u);
}

// Fills `model` with `coordinates` distinct coordinates (one namespace, ids
// 0..coordinates-1), in Updates of at most 1M features.
// Teaches `model` the coordinates first..first + coordinates - 1.
void Fill(v1::Clickd::Stub& stub, const std::string& model, int coordinates, int first = 0) {
  constexpr int kPerExample = 62'500, kExamplesPerRequest = 16;
  const int end = first + coordinates;
  for (int at = first; at < end;) {
    v1::UpdateRequest request;
    request.set_model(model);
    for (int e = 0; e < kExamplesPerRequest && at < end; ++e) {
      v1::LabeledExample* le = request.add_examples();
      le->set_label(e % 2);
      v1::Namespace* ns = le->mutable_example()->add_namespaces();
      ns->set_name("f");
      for (int j = 0; j < kPerExample && at < end; ++j, ++at) {
        ns->add_features()->set_id(static_cast<uint64_t>(at));
      }
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    v1::UpdateResponse response;
    const grpc::Status s = stub.Update(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
}

grpc::Status Digest(v1::Clickd::Stub& stub, const std::string& model,
                    std::chrono::milliseconds timeout, std::string* digest = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::GetModelRequest request;
  request.set_model(model);
  request.set_state_digest(true);
  v1::GetModelResponse response;
  const grpc::Status s = stub.GetModel(&context, request, &response);
  if (digest != nullptr) *digest = response.model().state_digest();
  return s;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// An Update that waits for its model's learn lock behind a long dense step
// past its deadline is refused whole and learns nothing (issue 33, N12):
// all or nothing, as UpdateResponse.applied says. ada_full at the smallest
// d whose step takes over 0.7 s here (up to 1536: 3.6e9 multiply-adds,
// under --max_dense_work_per_update); two
// learners per model so that the second Update reaches the lock while the
// first one steps. A third Update without a deadline, sent once the first
// ended, queues behind the second, so when it is answered the second has
// been decided.
TEST(DenseDeadline, AnUpdateThatWaitedPastItsDeadlineLearnsNothing) {
  auto server =
      Start({"--worker_threads=4", "--max_learners_per_model=2", "--max_inline_update_features=0"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  // The smallest dimension whose one step takes over 0.7 s on this build
  // (a release build needs about 1536; a sanitizer build much less), so
  // that the test neither cannot tell nor runs for minutes.
  std::string model;
  int dim = 0;
  const auto update_of = [&](const std::string& name, int d, std::chrono::milliseconds timeout) {
    v1::UpdateRequest request;
    request.set_model(name);
    v1::LabeledExample* le = request.add_examples();
    le->set_label(1);
    v1::DenseValues* values = le->mutable_example()->add_dense();
    values->set_namespace_("emb");
    for (int i = 0; i < d; ++i) values->add_values(0.01f * (i % 7));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    v1::UpdateResponse response;
    return stub->Update(&context, request, &response);
  };
  for (int d : {256, 512, 768, 1024, 1536}) {
    v1::ModelConfig config = Named(absl::StrCat("probe", d));
    auto* emb = config.add_dense_namespaces();
    emb->set_name("emb");
    emb->set_dim(d);
    config.set_dense_optimizer("ada_full");
    ASSERT_TRUE(CreateModel(*stub, config).ok());
    const auto probe_start = std::chrono::steady_clock::now();
    ASSERT_TRUE(update_of(config.name(), d, std::chrono::seconds(120)).ok());
    if (SecondsSince(probe_start) > 0.7 || d == 1536) {
      dim = d;
      break;
    }
  }
  model = absl::StrCat("dense", dim);
  v1::ModelConfig config = Named(model);
  auto* emb = config.add_dense_namespaces();
  emb->set_name("emb");
  emb->set_dim(dim);
  config.set_dense_optimizer("ada_full");
  ASSERT_TRUE(CreateModel(*stub, config).ok());
  const auto update = [&](std::chrono::milliseconds timeout) {
    return update_of(model, dim, timeout);
  };
  const auto start = std::chrono::steady_clock::now();
  std::future<grpc::Status> first =
      std::async(std::launch::async, [&] { return update(std::chrono::seconds(120)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const grpc::Status second = update(std::chrono::milliseconds(300));
  EXPECT_EQ(second.error_code(), StatusCode::DEADLINE_EXCEEDED) << second.error_message();
  ASSERT_TRUE(first.get().ok());
  ASSERT_GT(SecondsSince(start), 0.6) << "the dense step is too short to tell";
  ASSERT_TRUE(update(std::chrono::seconds(120)).ok());
  v1::GetModelRequest get;
  get.set_model(model);
  v1::GetModelResponse info;
  ASSERT_TRUE(stub->GetModel(Context().get(), get, &info).ok());
  EXPECT_EQ(info.model().updates(), 2u) << "the Update refused at its deadline was learned";
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

// GetModel's state_digest (issue 33, N4) on a model of 4M coordinates: it
// holds the model's learners off only while its copy begins, not for the
// whole digest; it stops at its deadline (the one worker is free again long
// before a whole digest could end), and at SIGTERM (the server exits long
// before a whole digest could end, with a 60 s grace). Each bound is half
// of a whole digest measured in the same run, so none depends on the
// machine's speed: the model grows (4M coordinates at a time, to 24M) until
// a whole digest takes over 0.4 s, so that half of one is long enough to
// tell apart from a call's own cost.
TEST(DigestCost, DigestHoldsNoLearnerAndStopsAtItsDeadlineAndAtShutdown) {
  constexpr auto kLong = std::chrono::seconds(120);
  auto server = Start({"--worker_threads=1", "--max_learners_per_model=1",
                       "--max_features_per_example=65536", "--shutdown_grace_seconds=60"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  constexpr int kStep = 4'000'000;
  int coordinates = 0;
  double digest_seconds = 0;
  auto start = std::chrono::steady_clock::now();
  while (digest_seconds <= 0.4 && coordinates < 6 * kStep) {
    Fill(*stub, "default", kStep, coordinates);
    coordinates += kStep;
    start = std::chrono::steady_clock::now();
    ASSERT_TRUE(Digest(*stub, "default", kLong).ok());
    digest_seconds = SecondsSince(start);
  }
  ASSERT_GT(digest_seconds, 0.4) << "the model is too small to tell at " << coordinates;
  auto small_update = [&] {
    v1::UpdateRequest request;
    request.set_model("default");
    v1::LabeledExample* le = request.add_examples();
    le->set_label(1);
    le->mutable_example()->add_namespaces()->set_name("f");
    le->mutable_example()->mutable_namespaces(0)->add_features()->set_id(1);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kLong);
    v1::UpdateResponse response;
    return stub->Update(&context, request, &response);
  };

  // A short deadline: DEADLINE_EXCEEDED, and the worker is free soon after.
  const grpc::Status late = Digest(*stub, "default", std::chrono::milliseconds(50));
  EXPECT_EQ(late.error_code(), StatusCode::DEADLINE_EXCEEDED) << late.error_message();
  start = std::chrono::steady_clock::now();
  EXPECT_TRUE(small_update().ok());
  EXPECT_LT(SecondsSince(start), digest_seconds / 2)
      << "the worker went on with a digest past its deadline (a whole one: " << digest_seconds
      << " s)";

  // With two workers, an Update on the model during a digest waits for the
  // copy to begin only.
  // (One worker: the Update would wait for the digest's worker.)
  server->Stop();
  server = Start({"--worker_threads=2", "--max_learners_per_model=1",
                  "--max_features_per_example=65536", "--shutdown_grace_seconds=60"});
  ASSERT_NE(server, nullptr);
  stub = server->NewStub();
  Fill(*stub, "default", coordinates);
  {
    std::future<grpc::Status> digest =
        std::async(std::launch::async, [&] { return Digest(*stub, "default", kLong); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // A second digest while the first runs is refused before it copies
    // anything (--max_concurrent_digests, 1 by default): admin callers
    // cannot stack copies of the model (issue 33, N4 as admin).
    const grpc::Status second = Digest(*stub, "default", kLong);
    EXPECT_EQ(second.error_code(), StatusCode::RESOURCE_EXHAUSTED) << second.error_message();
    EXPECT_EQ(second.error_message(),
              "GetModel state_digest: too many state_digests at once: 1 are open; the limit is 1 "
              "(max_concurrent_digests)");
    start = std::chrono::steady_clock::now();
    EXPECT_TRUE(small_update().ok());
    const double update_seconds = SecondsSince(start);
    start = std::chrono::steady_clock::now();
    EXPECT_TRUE(digest.get().ok());
    // The Update ended well before the digest did.
    EXPECT_GT(SecondsSince(start), update_seconds) << "the Update waited for the whole digest";
  }

  // SIGTERM during a digest without a deadline: the digest stops
  // (UNAVAILABLE) and the server exits within half a digest's time.
  std::future<grpc::Status> digest =
      std::async(std::launch::async, [&] { return Digest(*stub, "default", kLong); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  start = std::chrono::steady_clock::now();
  server->Signal(SIGTERM);
  const auto exit = server->WaitForExit(std::chrono::seconds(120));
  const double exit_seconds = SecondsSince(start);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->ToString(), "exit 0") << server->Output();
  const grpc::Status stopped = digest.get();
  EXPECT_EQ(stopped.error_code(), StatusCode::UNAVAILABLE) << stopped.error_message();
  EXPECT_LT(exit_seconds, digest_seconds / 2 + 1.0) << server->Output();
}

// explain_top_k repeats each context feature's name in every candidate's
// explanation (issue 33, N5): a request that could make a response over
// --max_message_bytes is refused before any explanation is built, naming
// explain_top_k and the limit; a smaller one is answered.
TEST(CallerErrors, ExplanationsArePricedBeforeTheyAreBuilt) {
  auto server = Start({"--max_message_bytes=1048576"});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  v1::PredictRequest request;
  request.set_model("default");
  // 100 context features with 100-byte names (10 KB), 200 candidates: up
  // to 200 x 100 explanations of ~150 bytes, 3 MB.
  auto* context = request.mutable_context()->add_namespaces();
  context->set_name("user");
  for (int j = 0; j < 100; ++j) {
    context->add_features()->set_name(absl::StrCat(j, std::string(97, 'x')));
  }
  for (int i = 0; i < 200; ++i) {
    auto* ad = request.add_candidates()->add_namespaces();
    ad->set_name("ad");
    ad->add_features()->set_id(i);
  }
  request.set_explain_top_k(100);
  v1::PredictResponse response;
  const grpc::Status refused = stub->Predict(Context().get(), request, &response);
  EXPECT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("explain_top_k 100 for 200 candidates"), std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("the limit is --max_message_bytes 1048576"),
            std::string::npos)
      << refused.error_message();
  request.set_explain_top_k(5);
  const grpc::Status answered = stub->Predict(Context().get(), request, &response);
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  ASSERT_EQ(response.predictions_size(), 200);
  EXPECT_EQ(response.predictions(0).explanation_size(), 5);
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(CallerErrors, HugeNamesAreCutInMessages) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  const std::string huge(10 << 10, 'm');
  v1::GetModelRequest get;
  get.set_model(huge);
  v1::GetModelResponse got;
  grpc::Status s = stub->GetModel(Context().get(), get, &got);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_LT(s.error_message().size(), 300u) << s.error_message();
  EXPECT_NE(s.error_message().find("(10240 bytes)"), std::string::npos) << s.error_message();
  s = CreateModel(*stub, Named(huge));
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(s.error_message().size(), 300u) << s.error_message();
}

// Errors that come from the data directory name it "<data_dir>" to callers;
// the server's log has the real path.
TEST(CallerErrors, ServerPathsStayInTheServerLog) {
  const std::string dir = NewDataDir("paths");
  auto server = Start({"--data_dir=" + dir});
  ASSERT_NE(server, nullptr);
  // A symbolic link that points at itself where the model's directory
  // would go makes the create fail (ELOOP) with a message naming the path.
  std::filesystem::create_symlink("blocked", dir + "/models/blocked");
  auto stub = server->NewStub();
  const grpc::Status s = CreateModel(*stub, Named("blocked"));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message().find(dir), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("<data_dir>/models/blocked"), std::string::npos)
      << s.error_message();
  stub.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
  EXPECT_NE(server->Output().find(dir + "/models/blocked"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The poison of the adversarial report: one accepted Update with importance
// 1e20, or a squared-loss label of 1e20, made every prediction NaN for
// good (the record was in the update log); configs like ftrl.alpha=1e308
// were accepted. Now each is refused naming the field and the limit, and
// inputs at the limits, learned many times and replayed after kill -9,
// leave every margin finite.
TEST(NumericSafety, PoisonIsRefusedAndInputsAtTheLimitsStayFinite) {
  const std::string dir = NewDataDir("poison");
  auto server = Start({"--data_dir=" + dir});
  ASSERT_NE(server, nullptr);
  auto stub = server->NewStub();
  v1::ModelConfig squared = Named("sq");
  squared.set_loss("squared");
  ASSERT_TRUE(CreateModel(*stub, squared).ok());

  v1::ModelConfig bad = Named("bad");
  bad.mutable_ftrl()->set_alpha(1e308);
  grpc::Status s = CreateModel(*stub, bad);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("config.ftrl.alpha is 1e+308"), std::string::npos)
      << s.error_message();
  bad = Named("bad");
  bad.mutable_sgd()->set_eta(1e300);  // sgd is not even the selected optimizer
  s = CreateModel(*stub, bad);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("config.sgd.eta is 1e+300"), std::string::npos)
      << s.error_message();

  auto update_of = [](const std::string& model, float label, float importance, float value) {
    v1::UpdateRequest update;
    update.set_model(model);
    v1::LabeledExample* e = update.add_examples();
    e->set_label(label);
    e->set_importance(importance);
    v1::Namespace* ns = e->mutable_example()->add_namespaces();
    ns->set_name("ad");
    v1::Feature* f = ns->add_features();
    f->set_name("x");
    f->set_value(value);
    return update;
  };
  v1::UpdateResponse updated;
  s = stub->Update(Context().get(), update_of("default", 1, 1e20f, 1), &updated);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "examples[0].importance is 1e+20; the limit is 10000");
  s = stub->Update(Context().get(), update_of("sq", 1e20f, 1, 1), &updated);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("the limit under squared loss is 1e+06"), std::string::npos)
      << s.error_message();

  // At the limits, again and again.
  for (int i = 0; i < 200; ++i) {
    const float sign = i % 2 == 0 ? 1.0f : -1.0f;
    ASSERT_TRUE(
        stub->Update(Context().get(), update_of("default", i % 2, 1e4f, sign * 1e6f), &updated)
            .ok());
    ASSERT_TRUE(
        stub->Update(Context().get(), update_of("sq", sign * 1e6f, 1e4f, sign * 1e6f), &updated)
            .ok());
  }
  auto all_finite = [](v1::Clickd::Stub& stub) {
    for (const char* model : {"default", "sq"}) {
      v1::PredictRequest predict;
      predict.set_model(model);
      for (const char* name : {"x", "never-seen"}) {
        v1::Namespace* ns = predict.add_candidates()->add_namespaces();
        ns->set_name("ad");
        ns->add_features()->set_name(name);
      }
      v1::PredictResponse predicted;
      const grpc::Status st = stub.Predict(Context().get(), predict, &predicted);
      if (!st.ok() || predicted.predictions_size() != 2) return false;
      for (const v1::Prediction& p : predicted.predictions()) {
        if (!std::isfinite(p.margin()) || !std::isfinite(p.prediction())) return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(all_finite(*stub));
  stub.reset();
  server->Signal(SIGKILL);
  server->WaitForExit(std::chrono::seconds(20));
  auto restarted = Start({"--data_dir=" + dir});
  ASSERT_NE(restarted, nullptr);
  auto again = restarted->NewStub();
  EXPECT_TRUE(all_finite(*again));
  again.reset();
  EXPECT_EQ(restarted->Stop().ToString(), "exit 0");
  std::filesystem::remove_all(dir);
}

TEST(StartupFlags, OutOfRangeFlagsStopTheServer) {
  struct Case {
    std::string flag;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"--address=127.0.0.1:99999", "--address=127.0.0.1:99999 is not HOST:PORT"},
      {"--max_message_bytes=-1", "--max_message_bytes=-1 must be in ["},
      {"--threads=-5", "--threads=-5 must be in ["},
      {"--max_models=0", "--max_models=0 must be in ["},
      {"--max_candidates=0", "--max_candidates=0 must be in ["},
      {"--shutdown_grace_seconds=-1", "--shutdown_grace_seconds=-1 must be in ["},
      {"--metrics_port=70000", "--metrics_port=70000"},
  };
  for (const Case& c : cases) {
    const auto result = RunClickd({c.flag});
    EXPECT_EQ(result.status.ToString(), "exit 2") << c.flag << "\n" << result.output;
    EXPECT_NE(result.output.find(c.message), std::string::npos) << c.flag << "\n" << result.output;
  }
}

}  // namespace
}  // namespace clickd
