// Runs the real `clickctl loadgen` against the real clickd: closed and open
// loop for predict, update and health, one UpdateStream, the count bound,
// usage errors and an unreachable server. One server serves the whole suite
// on a free port of 127.0.0.1 (tests/server_process.h) and is stopped by
// PID with SIGTERM, expecting exit code 0.
//
// Runs are short (about a second each) and every clickctl run is killed
// after 120 s. No assertion depends on how fast anything runs: the checks
// are that the JSON fields exist and are consistent (requests > 0, no
// errors, ordered percentiles), never that a rate or a latency reaches some
// value.
#include <cmath>
#include <memory>
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
using ::clickd::testing::RunCommand;
using ::clickd::testing::ServerProcess;

// Runs clickctl with `args` (shell syntax), killed after 120 s at most.
CommandResult Clickctl(const std::string& args) {
  return RunCommand(absl::StrCat(CLICKCTL_PATH, " ", args), absl::Seconds(120));
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ClickctlLoadgenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto server = ServerProcess::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }

  static void TearDownTestSuite() {
    if (server_ == nullptr) return;
    EXPECT_EQ(server_->Stop().ToString(), "exit 0") << server_->Output();
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(server_, nullptr) << "clickd did not start"; }

  // `clickctl loadgen` with --server set to ours and --json.
  CommandResult Loadgen(const std::string& args) {
    return Clickctl(absl::StrCat("loadgen ", args, " --json --server=", server_->address()));
  }

  // Runs a short load and checks the report's consistency; returns its JSON.
  std::string ExpectSaneRun(const std::string& args, const std::string& method,
                            const std::string& mode) {
    CommandResult r =
        Loadgen(absl::StrCat("--method=", method, " --duration_s=1 --warmup_s=0.2 ", args));
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err << r.out;
    const std::string json = LastLine(r.out);
    EXPECT_EQ(JsonText(json, "method"), method) << json;
    EXPECT_EQ(JsonText(json, "mode"), mode) << json;
    EXPECT_GT(JsonNumber(json, "requests"), 0) << json;
    EXPECT_EQ(JsonNumber(json, "errors"), 0) << json;
    EXPECT_EQ(JsonText(json, "errors_by_code"), "{}") << json;
    EXPECT_EQ(JsonNumber(json, "ok"), JsonNumber(json, "requests")) << json;
    EXPECT_GT(JsonNumber(json, "seconds"), 0) << json;
    EXPECT_GT(JsonNumber(json, "rate"), 0) << json;
    const double p50 = JsonNumber(json, "p50_us"), p90 = JsonNumber(json, "p90_us"),
                 p99 = JsonNumber(json, "p99_us"), p999 = JsonNumber(json, "p999_us"),
                 max = JsonNumber(json, "max_us"), min = JsonNumber(json, "min_us");
    EXPECT_GT(p50, 0) << json;
    EXPECT_LE(min, p50) << json;
    EXPECT_LE(p50, p90) << json;
    EXPECT_LE(p90, p99) << json;
    EXPECT_LE(p99, p999) << json;
    EXPECT_LE(p999, max) << json;
    return json;
  }

  static ServerProcess* server_;
};

ServerProcess* ClickctlLoadgenTest::server_ = nullptr;

// candidates_per_second and examples_per_second count `per_request` units
// for every request, so they are the rate times that (up to printing).
void ExpectUnitsRate(const std::string& json, const std::string& key, double per_request) {
  const double rate = JsonNumber(json, "rate");
  EXPECT_NEAR(JsonNumber(json, key), per_request * rate, 1e-6 * per_request * rate) << json;
}

TEST_F(ClickctlLoadgenTest, PredictClosedAndOpenLoop) {
  const std::string shape = "--context_features=5 --candidates=3 --candidate_features=8";
  std::string json = ExpectSaneRun(absl::StrCat(shape, " --concurrency=4"), "predict", "closed");
  EXPECT_EQ(JsonNumber(json, "concurrency"), 4);
  EXPECT_EQ(JsonNumber(json, "candidates"), 3);
  EXPECT_EQ(JsonNumber(json, "context_features"), 5);
  ExpectUnitsRate(json, "candidates_per_second", 3);

  json = ExpectSaneRun(absl::StrCat(shape, " --qps=200"), "predict", "open");
  EXPECT_EQ(JsonNumber(json, "target_qps"), 200);
  EXPECT_GE(JsonNumber(json, "max_send_lag_us"), 0);
  EXPECT_EQ(JsonNumber(json, "unsent"), 0);
  ExpectUnitsRate(json, "candidates_per_second", 3);
}

TEST_F(ClickctlLoadgenTest, UpdateClosedAndOpenLoopTeachTheModel) {
  std::string json = ExpectSaneRun("--candidates=2 --concurrency=2", "update", "closed");
  ExpectUnitsRate(json, "examples_per_second", 2);
  json = ExpectSaneRun("--candidates=2 --context_features=3 --qps=100", "update", "open");
  ExpectUnitsRate(json, "examples_per_second", 2);

  auto client = ClickdClient::Create(server_->address());
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = (*client)->GetModel("default");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GT(info->updates(), 0u);
  EXPECT_GT(info->coordinates(), 0u);
}

TEST_F(ClickctlLoadgenTest, HealthClosedAndOpenLoop) {
  std::string json = ExpectSaneRun("--concurrency=8", "health", "closed");
  EXPECT_TRUE(JsonAt(json, "candidates_per_second").is_null()) << json;
  json = ExpectSaneRun("--qps=300", "health", "open");
  EXPECT_EQ(JsonNumber(json, "target_qps"), 300);
}

TEST_F(ClickctlLoadgenTest, UpdateStream) {
  const std::string json =
      ExpectSaneRun("--batch_size=20 --candidate_features=10", "update_stream", "stream");
  EXPECT_EQ(JsonNumber(json, "batch_size"), 20);
  ExpectUnitsRate(json, "examples_per_second", 20);
}

// --qps paces a stream: message i is written no earlier than i / Q seconds
// after the start, so a 1-second run at 50/s writes at most 50 (an unpaced
// stream of these small messages writes thousands).
TEST_F(ClickctlLoadgenTest, UpdateStreamAtASetRate) {
  CommandResult r =
      Loadgen("--method=update_stream --qps=50 --warmup_s=0 --duration_s=1 --batch_size=5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = LastLine(r.out);
  EXPECT_GT(JsonNumber(json, "requests"), 0) << json;
  EXPECT_LE(JsonNumber(json, "requests"), 50) << json;
  EXPECT_EQ(JsonNumber(json, "errors"), 0) << json;
}

TEST_F(ClickctlLoadgenTest, MaxRequestsBoundsTheRun) {
  // The count bound ends these runs; the minute is only a backstop.
  for (const std::string mode : {"--concurrency=3", "--qps=1000"}) {
    CommandResult r = Loadgen(
        absl::StrCat("--method=health --max_requests=25 --duration_s=60 ", "--warmup_s=0 ", mode));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(JsonNumber(LastLine(r.out), "requests"), 25) << r.out;
  }
}

TEST_F(ClickctlLoadgenTest, UsageErrors) {
  for (const std::string args :
       {"--method=predict --concurrency=2 --qps=10", "--method=bogus",
        "--method=health --candidates=3", "--method=predict --candidates=abc",
        "--method=update_stream --concurrency=2", "--method=update_stream --qps=0",
        "--method=predict --duration_s=0", "--method=predict --concurrency=0",
        "--method=predict --optimizer=sgd", "--method=predict extra"}) {
    CommandResult r = Loadgen(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_TRUE(Has(r.err, "clickctl loadgen: ")) << args << ": " << r.err;
  }
}

TEST_F(ClickctlLoadgenTest, UnreachableServerFails) {
  auto port = testing::FindFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  CommandResult r = Clickctl(absl::StrCat("loadgen --method=health --json --deadline_ms=300 ",
                                          "--server=127.0.0.1:", *port));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(JsonText(r.out, "code"), "UNAVAILABLE") << r.out;
}

}  // namespace
}  // namespace clickd
