// Runs the real clickctl binary against the real clickd binary: predict,
// update and models through --json, and `replay --server` against
// `replay --offline` on iPinYou. Each test starts its own server on a free
// port of 127.0.0.1 (tests/server_process.h), waits until the client
// library can read model "default", and stops the server by PID with
// SIGTERM, expecting exit code 0.
//
// Every clickctl run is bounded by `timeout`, every loop in count and time;
// no assertion depends on how fast anything runs.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::CommandResult;
using ::clickd::testing::JsonAt;
using ::clickd::testing::JsonNumber;
using ::clickd::testing::JsonText;
using ::clickd::testing::LastLine;
using ::clickd::testing::ParseLastLine;
using ::clickd::testing::RunCommand;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using ::clickd::testing::TempFile;

const std::string kIpinyou = std::string(CLICKD_SHARED_DATA) + "/ipinyou/train.fm.txt";

// Replayed metrics travel as doubles in UpdateStreamResponse and print
// exactly (shortest round-trip form) on both sides; the server's margins are
// floats, as the offline replay's are inside ProgressiveMetrics, so the
// figures should be identical. The tolerance is a margin of safety only.
constexpr double kRelativeTolerance = 1e-9;

// Runs clickctl with `args` (shell syntax), killed after 120 s at most.
CommandResult Clickctl(const std::string& args) {
  return RunCommand(absl::StrCat(CLICKCTL_PATH, " ", args), absl::Seconds(120));
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void ExpectRelativelyNear(double a, double b, const std::string& what) {
  EXPECT_LE(std::abs(a - b), kRelativeTolerance * std::max(std::abs(a), std::abs(b))) << what;
}

class ClickctlNetworkTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // A graceful stop waits for clients to close their connections: close
    // ours rather than wait for gRPC to notice the server's GOAWAY.
    client_.reset();
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop().ToString(), "exit 0") << server_->Output();
    }
  }

  // Starts clickd with `flags` and waits until the client library reads
  // model "default" from it.
  void StartServer(std::vector<std::string> flags = {}) {
    ServerOptions options;
    options.flags = std::move(flags);
    auto server = ServerProcess::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto client = ClickdClient::Create(server_->address());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    absl::Status last;
    for (int attempt = 0; attempt < 100; ++attempt) {  // at most ~25 s
      CallOptions call;
      call.timeout = absl::Milliseconds(200);
      call.wait_for_ready = true;
      last = client_->GetModel("default", call).status();
      if (last.ok()) return;
      absl::SleepFor(absl::Milliseconds(50));
    }
    FAIL() << "clickd never served model \"default\": " << last << "\n" << server_->Output();
  }

  // clickctl with --server set to ours.
  CommandResult Run(const std::string& args) {
    return Clickctl(absl::StrCat(args, " --server=", server_->address()));
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<ClickdClient> client_;
};

TEST_F(ClickctlNetworkTest, ModelsCreateListGetDelete) {
  StartServer();
  CommandResult r = Run("models create --model=m1 --optimizer=adagrad --eta=0.2 --bits=18 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string json = LastLine(r.out);
  EXPECT_EQ(JsonText(json, "name"), "m1") << json;
  EXPECT_EQ(JsonText(json, "optimizer"), "adagrad") << json;
  EXPECT_EQ(JsonNumber(json, "eta"), 0.2);
  EXPECT_EQ(JsonNumber(json, "bits"), 18);
  EXPECT_EQ(JsonNumber(json, "updates"), 0);

  r = Run(R"(models create --config_json='{"name": "m2", "optimizer": "sgd"}' --json)");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonText(r.out, "optimizer"), "sgd") << r.out;

  r = Run("models create --model=m1 --json");  // exists already
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "ALREADY_EXISTS") << r.out;

  r = Run("models list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json = LastLine(r.out);
  std::set<std::string> names;
  for (const auto& model : JsonAt(json, "/models")) names.insert(model.value("name", ""));
  for (const char* name : {"default", "m1", "m2"}) {
    EXPECT_EQ(names.count(name), 1u) << name << " in " << json;
  }

  r = Run("models get --model=m2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json = LastLine(r.out);
  for (const char* key : {"updates", "coordinates", "bytes", "examples"}) {
    EXPECT_EQ(JsonNumber(json, key), 0) << key;
  }
  const nlohmann::ordered_json model = ParseLastLine(json);
  EXPECT_TRUE(model.contains("logloss") && model["logloss"].is_null()) << json;  // no examples yet
  EXPECT_TRUE(model.contains("auc_error_bound")) << json;

  r = Run("models delete --model=m2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(LastLine(r.out), R"({"deleted":"m2"})");
  r = Run("models get --model=m2 --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "NOT_FOUND") << r.out;
  EXPECT_TRUE(Has(r.err, "NOT_FOUND")) << r.err;
}

TEST_F(ClickctlNetworkTest, PredictAndUpdateFromFlagsAndJson) {
  StartServer();
  ASSERT_EQ(Run("models create --model=ctr --json").exit_code, 0);
  const std::string context = "--context='user|country=FR,age:30 page|home'";
  CommandResult r = Run(absl::StrCat("predict --model=ctr --json --request_id=r1 ", context,
                                     " --candidates='ad|#7,brand=x; ad|#8'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string json = LastLine(r.out);
  EXPECT_EQ(JsonText(json, "request_id"), "r1") << json;
  EXPECT_EQ(JsonNumber(json, "model_version"), 0);
  EXPECT_EQ(JsonNumber(json, "prediction"), 0.5);  // an untrained logistic model
  EXPECT_EQ(JsonNumber(json, "/predictions/1/prediction"), 0.5) << "second candidate";

  r = Run(absl::StrCat("update --model=ctr --json ", context, " --example='ad|#7' --label=1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json = LastLine(r.out);
  EXPECT_EQ(JsonNumber(json, "applied"), 1);
  EXPECT_EQ(JsonNumber(json, "model_version"), 1);
  EXPECT_EQ(JsonAt(json, "/margins"), nlohmann::ordered_json::parse("[0]")) << json;

  // The clicked ad now scores above the other one.
  r = Run(absl::StrCat("predict --model=ctr --json ", context, " --candidates='ad|#7; ad|#8'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json = LastLine(r.out);
  EXPECT_EQ(JsonNumber(json, "model_version"), 1);
  EXPECT_GT(JsonNumber(json, "/predictions/0/margin"), JsonNumber(json, "/predictions/1/margin"));

  const TempFile update_json_file("update.json", R"({"model": "ctr", "examples": [
      {"label": 0, "example": {"namespaces": [{"name": "ad", "features": [{"id": "8"}]}]}},
      {"label": 1, "importance": 2, "example": {}}]})");
  const std::string& update_json = update_json_file.path();
  r = Run("update --json --request_json=" + update_json);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "applied"), 2);

  r = Run(R"(predict --json --request_json='{"model": "ctr", "candidates": [{}]}')");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "model_version"), 3);

  r = Run("models get --model=ctr --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "updates"), 3);
  EXPECT_EQ(JsonNumber(LastLine(r.out), "examples"), 3);
  EXPECT_EQ(JsonNumber(LastLine(r.out), "weight"), 4);

  // Errors from the server keep their code.
  r = Run("update --model=ctr --json --example='ad|#7' --label=0.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "INVALID_ARGUMENT") << r.out;
  r = Run("predict --model=nope --json --candidates='ad|#7'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "NOT_FOUND") << r.out;
}

TEST_F(ClickctlNetworkTest, UsageErrorsExitTwoBeforeAnyCall) {
  StartServer();
  EXPECT_EQ(Run("predict --json").exit_code, 2);                          // no candidates
  EXPECT_EQ(Run("predict --candidates='ad' --json").exit_code, 2);        // no '|'
  EXPECT_EQ(Run("predict --candidates='ad|x' --passes=2").exit_code, 2);  // not predict's
  EXPECT_EQ(Run("update --example='ad|x'").exit_code, 2);                 // no label
  EXPECT_EQ(Run("predict --candidates='ad|x' --request_json='{}'").exit_code, 2);
  EXPECT_EQ(Run("predict --model=a --request_json='{\"model\":\"b\"}'").exit_code, 2);
  EXPECT_EQ(Run("models frobnicate").exit_code, 2);
  EXPECT_EQ(Run("models create --config_json='{}' --alpha=1").exit_code, 2);
  EXPECT_EQ(Run("models list --deadline_ms=0").exit_code, 2);
  const CommandResult r = Run("replay --format=libsvm --shuffle_seed=1 " + kIpinyou);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "--shuffle_seed does not apply to clickctl replay --server")) << r.err;
  const CommandResult m = Run("replay --format=libsvm --alpha=0.2 " + kIpinyou);
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_TRUE(Has(m.err,
                  "--alpha does not apply to clickctl replay --server without "
                  "--create_model"))
      << m.err;
  EXPECT_EQ(Run("replay --offline --format=libsvm " + kIpinyou).exit_code, 2);  // both modes
  // Nothing reached the model.
  auto info = client_->GetModel("default");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 0u);
}

// The server computes exact progressive metrics per stream, so one stream
// of the file, in file order, into a fresh model with the same config gives
// the offline replay's figures.
TEST_F(ClickctlNetworkTest, ReplayServerEqualsReplayOfflineOnIpinyou) {
  StartServer();
  const struct {
    std::string model;
    std::string model_flags;
    std::string batch;
  } cases[] = {
      {"ipinyou_default", "", ""},
      {"ipinyou_tuned", "--alpha=0.05 --lambda1=0.5 --bits=18 --hash_seed=3", "--batch_size=7"},
      {"ipinyou_adagrad", "--optimizer=adagrad --eta=0.3", "--batch_size=1000"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    const CommandResult offline = Clickctl(
        absl::StrCat("replay --offline --format=libsvm --json ", c.model_flags, " ", kIpinyou));
    ASSERT_EQ(offline.exit_code, 0) << offline.err;
    const CommandResult served =
        Run(absl::StrCat("replay --format=libsvm --json --create_model --model=", c.model, " ",
                         c.model_flags, " ", c.batch, " ", kIpinyou));
    ASSERT_EQ(served.exit_code, 0) << served.err;
    const std::string a = LastLine(offline.out), b = LastLine(served.out);
    EXPECT_EQ(JsonNumber(a, "examples"), 26773);
    EXPECT_EQ(JsonNumber(b, "examples"), 26773);
    EXPECT_EQ(JsonNumber(b, "acknowledged"), 26773);
    EXPECT_EQ(JsonNumber(b, "auc_error_bound"), 0);  // a stream's AUC is exact
    for (const char* key :
         {"weight", "loss", "logloss", "auc", "hinge", "mistakes", "calibration", "squared"}) {
      ExpectRelativelyNear(JsonNumber(a, key), JsonNumber(b, key), key);
    }
    EXPECT_EQ(JsonNumber(a, "coordinates"), JsonNumber(b, "coordinates"));
    EXPECT_EQ(JsonNumber(a, "bytes"), JsonNumber(b, "bytes"));

    // The model's lifetime metrics saw the same examples; its AUC is
    // streaming, off by at most its bound.
    const CommandResult get = Run("models get --json --model=" + c.model);
    ASSERT_EQ(get.exit_code, 0) << get.err;
    const std::string g = LastLine(get.out);
    EXPECT_EQ(JsonNumber(g, "updates"), 26773);
    ExpectRelativelyNear(JsonNumber(g, "logloss"), JsonNumber(a, "logloss"), "lifetime logloss");
    EXPECT_LE(std::abs(JsonNumber(g, "auc") - JsonNumber(a, "auc")),
              JsonNumber(g, "auc_error_bound") + 1e-9);
  }
}

TEST_F(ClickctlNetworkTest, ReplayStoppedByTheServerReportsWhatWasAcknowledged) {
  // 250 small lines, then one with more features than the server allows.
  StartServer({"--max_features_per_example=10"});
  std::string lines;
  for (int i = 0; i < 250; ++i) lines += absl::StrCat(i % 2, " ", i % 7 + 1, ":1\n");
  lines += "1";
  for (int f = 1; f <= 20; ++f) lines += absl::StrCat(" ", f, ":1");
  lines += "\n0 3:1\n";
  const TempFile file("too_wide.libsvm", lines);
  const std::string& path = file.path();
  const CommandResult r =
      Run("replay --format=libsvm --json --create_model --model=wide --batch_size=100 " + path);
  EXPECT_EQ(r.exit_code, 1);
  const std::string json = LastLine(r.out);
  EXPECT_EQ(JsonText(json, "code"), "RESOURCE_EXHAUSTED") << json;
  EXPECT_EQ(JsonNumber(json, "acknowledged"), 200);  // messages 0 and 1; message 2 was rejected
  auto info = client_->GetModel("wide");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 200u);
}

TEST_F(ClickctlNetworkTest, ReplayStopsAtABadLineAfterSendingTheLinesBeforeIt) {
  StartServer();
  const TempFile file("bad.libsvm", "1 3:1 4:1\n0 5:1\n1 3:1\n0 5:oops\n1 3:1\n");
  const std::string& path = file.path();
  CommandResult r = Run("replay --format=libsvm --json --create_model --model=bad " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.err, path + ":4:")) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "acknowledged"), 3);
  r = Run("replay --format=libsvm --json --skip_bad_lines --model=bad " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "examples"), 4);
  EXPECT_EQ(JsonNumber(LastLine(r.out), "skipped_lines"), 1);
  EXPECT_EQ(JsonNumber(LastLine(r.out), "model_version"), 7);
}

TEST_F(ClickctlNetworkTest, StoppedServerIsUnavailableToClickctlAndTheLibrary) {
  StartServer();
  const std::string address = server_->address();
  client_.reset();
  EXPECT_EQ(server_->Stop().ToString(), "exit 0") << server_->Output();
  server_.reset();
  const CommandResult r = Clickctl("predict --json --candidates='ad|x' --server=" + address);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "UNAVAILABLE") << r.out;
  ClientOptions options;
  options.predict_retry.max_attempts = 2;
  auto client = ClickdClient::Create(address, options);
  ASSERT_TRUE(client.ok()) << client.status();
  v1::PredictRequest request;
  request.set_model("default");
  request.add_candidates();
  EXPECT_EQ((*client)->Predict(request).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace clickd
