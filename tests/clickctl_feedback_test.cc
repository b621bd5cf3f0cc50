// The impression-to-click loop through the real clickctl binary against the
// real clickd binary (issue 15): `models create` with the feedback flags,
// `predict --log_impressions`, `feedback` from flags and from stdin, and
// `replay --server --delayed_clicks`. Each test starts its own server on a
// free port of 127.0.0.1 (tests/server_process.h), waits until the client
// library can read model "default", and stops the server by PID with
// SIGTERM, expecting exit code 0.
//
// Every clickctl run is bounded by `timeout`, every loop in count and time;
// no assertion depends on how fast anything runs: the loops' TTL is an hour,
// so no impression expires during a test.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using ::clickd::testing::TempFile;

// Runs clickctl with `args` (shell syntax), killed after 120 s at most.
CommandResult Clickctl(const std::string& args) {
  return RunCommand(absl::StrCat(CLICKCTL_PATH, " ", args), absl::Seconds(120));
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The non-empty lines of `text`.
std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

class ClickctlFeedbackTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // A graceful stop waits for clients to close their connections: close
    // ours rather than wait for gRPC to notice the server's GOAWAY.
    client_.reset();
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop().ToString(), "exit 0") << server_->Output();
    }
  }

  // Starts clickd and waits until the client library reads model "default".
  void StartServer() {
    auto server = ServerProcess::Start(ServerOptions{});
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

  // `command` piped into clickctl `args` with --server set to ours.
  CommandResult RunWithInput(const std::string& command, const std::string& args) {
    return RunCommand(
        absl::StrCat(command, " | ", CLICKCTL_PATH, " ", args, " --server=", server_->address()),
        absl::Seconds(120));
  }

  // Logs `candidates` as impressions of `model`; their ids, as printed.
  std::vector<std::string> LogImpressions(const std::string& model, const std::string& candidates) {
    const CommandResult r = Run(absl::StrCat("predict --json --log_impressions --model=", model,
                                             " --candidates='", candidates, "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> ids;
    for (const auto& p : JsonAt(r.out, "/predictions")) {
      EXPECT_TRUE(p["impression_id"].is_string()) << r.out;  // a uint64: not a JSON double
      ids.push_back(p.value("impression_id", ""));
    }
    return ids;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<ClickdClient> client_;
};

TEST_F(ClickctlFeedbackTest, CreatePredictAndLabelThroughClickctl) {
  StartServer();
  CommandResult r =
      Run("models create --json --model=loop --feedback_ttl_seconds=3600 "
          "--feedback_max_buffer_bytes=1048576 --feedback_policy=wait_negative");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto info = client_->GetModel("loop");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().feedback().ttl_seconds(), 3600);
  EXPECT_EQ(info->config().feedback().max_buffer_bytes(), 1048576u);
  EXPECT_EQ(info->config().feedback().policy(), "wait_negative");
  ASSERT_EQ(Run("models create --json --model=other --feedback_ttl_seconds=3600").exit_code, 0);

  const std::vector<std::string> ids = LogImpressions("loop", "ad|#7; ad|#8; ad|#9");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_NE(ids[0], ids[1]);
  const std::vector<std::string> other_ids = LogImpressions("other", "ad|#7");
  ASSERT_EQ(other_ids.size(), 1u);
  // Text output shows the ids too.
  r = Run("predict --model=loop --log_impressions --candidates='ad|#1'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "impression_id")) << r.out;

  // One item from flags: its status on the request's line, the tally last.
  r = Run("feedback --json --model=loop --label=1 --impression_id=" + ids[0]);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(JsonText(lines[0], "/items/0/impression_id"), ids[0]);
  EXPECT_EQ(JsonText(lines[0], "/items/0/status"), "JOINED") << lines[0];
  EXPECT_EQ(JsonNumber(lines[0], "joined"), 1);
  EXPECT_EQ(JsonNumber(lines[1], "/statuses/JOINED"), 1) << lines[1];
  EXPECT_EQ(JsonNumber(lines[1], "items"), 1);

  // The same label again is not an error: the item says so.
  r = Run("feedback --json --model=loop --label=1 --impression_id=" + ids[0]);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonText(Lines(r.out)[0], "/items/0/status"), "ALREADY_LABELLED") << r.out;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "/statuses/JOINED"), 0);

  // Many from stdin, two per request: a label 0, a made-up id of this
  // model, a repeat, another model's id and a click with importance 2.
  const std::string made_up = absl::StrCat(std::stoull(ids[2]) + 1000000);
  const std::string input = absl::StrCat(ids[1], " 0\\n", made_up, " 1\\n\\n", ids[0], " 1\\n",
                                         other_ids[0], " 1\\n", ids[2], " 1 2\\n");
  r = RunWithInput("printf '" + input + "'",
                   "feedback --json --model=loop --input=- --batch_size=2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;  // 3 requests (2 + 2 + 1 items) and the tally
  EXPECT_EQ(JsonText(lines[0], "/items/0/status"), "JOINED") << lines[0];
  EXPECT_EQ(JsonText(lines[0], "/items/1/status"), "UNKNOWN") << lines[0];
  EXPECT_EQ(JsonText(lines[1], "/items/0/status"), "ALREADY_LABELLED") << lines[1];
  EXPECT_EQ(JsonText(lines[1], "/items/1/status"), "OTHER_MODEL") << lines[1];
  EXPECT_EQ(JsonText(lines[2], "/items/0/status"), "JOINED") << lines[2];
  const std::string tally = lines[3];
  EXPECT_EQ(JsonNumber(tally, "requests"), 3);
  EXPECT_EQ(JsonNumber(tally, "items"), 5);
  EXPECT_EQ(JsonNumber(tally, "/statuses/JOINED"), 2) << tally;
  EXPECT_EQ(JsonNumber(tally, "/statuses/UNKNOWN"), 1);
  EXPECT_EQ(JsonNumber(tally, "/statuses/ALREADY_LABELLED"), 1);
  EXPECT_EQ(JsonNumber(tally, "/statuses/OTHER_MODEL"), 1);
  EXPECT_EQ(JsonNumber(tally, "/statuses/EXPIRED"), 0);

  // Three joined labels, each one example of the model's progressive
  // metrics, of weight 1 + 1 + 2.
  r = Run("models get --json --model=loop");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "examples"), 3) << r.out;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "weight"), 4) << r.out;

  // A file: a bad line stops after the items before it were sent.
  const TempFile file("feedback.txt", absl::StrCat(ids[1], " 1\n", ids[2], " maybe\n"));
  r = Run("feedback --json --model=loop --input=" + file.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Has(r.err, file.path() + ":2: label \"maybe\" is not a number")) << r.err;
  EXPECT_EQ(JsonText(Lines(r.out)[0], "/items/0/status"), "ALREADY_LABELLED") << r.out;
  EXPECT_EQ(JsonNumber(LastLine(r.out), "items_answered"), 1) << r.out;

  // A model without the loop refuses both calls, with the server's code.
  r = Run("predict --json --log_impressions --model=default --candidates='ad|#7'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "FAILED_PRECONDITION") << r.out;
  r = Run("feedback --json --model=default --label=1 --impression_id=" + ids[1]);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "FAILED_PRECONDITION") << r.out;
}

TEST_F(ClickctlFeedbackTest, BadFlagsAreRefusedNamingTheFlag) {
  StartServer();
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"models create --model=m --feedback_ttl_seconds=-5", "--feedback_ttl_seconds is -5"},
      {"models create --model=m --feedback_ttl_seconds=2592001",
       "--feedback_ttl_seconds is 2592001"},
      {"models create --model=m --feedback_ttl_seconds=60 --feedback_policy=later",
       "--feedback_policy \"later\" is unknown"},
      {"models create --model=m --feedback_ttl_seconds=60 --feedback_max_buffer_bytes=10",
       "--feedback_max_buffer_bytes is 10"},
      {"models create --model=m --feedback_policy=wait_drop",
       "--feedback_policy needs --feedback_ttl_seconds > 0"},
      {"models create --model=m --feedback_ttl_seconds=60 --loss=squared",
       "--feedback_ttl_seconds needs --loss=logistic"},
      {"models create --model=m --feedback_ttl_seconds=x", "feedback_ttl_seconds"},
      {"predict --candidates='ad|x' --feedback_ttl_seconds=60",
       "--feedback_ttl_seconds does not apply to clickctl predict"},
      {"update --example='ad|x' --label=1 --log_impressions",
       "--log_impressions does not apply to clickctl update"},
      {"feedback --model=m --label=1", "give --impression_id and --label, or --input"},
      {"feedback --model=m --impression_id=5", "give --impression_id with --label"},
      {"feedback --model=m --impression_id=5 --label=0.5", "label"},
      {"feedback --model=m --impression_id=5 --label=1 --importance=-1", "importance is -1"},
      {"feedback --model=m --impression_id=-5 --label=1", "impression_id"},
      {"feedback --model=m --input=- --label=1", "--input excludes --impression_id, --label"},
      {"feedback --model=m --input=- --batch_size=0", "--batch_size is 0"},
      {"feedback --model=m --impression_id=5 --label=1 --candidates='ad|x'",
       "--candidates does not apply to clickctl feedback"},
      {"replay --format=libsvm --time_scale=10 f",
       "--time_scale does not apply to clickctl replay --server without --delayed_clicks"},
      {"replay --format=libsvm --delayed_clicks --time_scale=0 f", "--time_scale is 0"},
      {"replay --format=libsvm --delayed_clicks --max_pending_clicks=0 f",
       "--max_pending_clicks is 0"},
      {"replay --format=libsvm --delayed_clicks --click_delay_mean_seconds=-1 f",
       "--click_delay_mean_seconds is -1"},
  };
  for (const auto& c : cases) {
    const CommandResult r = Run(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_TRUE(Has(r.err, c.message)) << c.args << "\n" << r.err;
  }
  // replay --offline has no loop to give the flags to (and no --server).
  const CommandResult offline =
      Clickctl("replay --offline --format=libsvm --feedback_ttl_seconds=60 f");
  EXPECT_EQ(offline.exit_code, 2);
  EXPECT_TRUE(
      Has(offline.err, "--feedback_ttl_seconds does not apply to clickctl replay --offline"))
      << offline.err;
  // Nothing reached the server: no model "m", nothing learned.
  EXPECT_EQ(client_->GetModel("m").status().code(), absl::StatusCode::kNotFound);
  auto info = client_->GetModel("default");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 0u);
}

// A small log with a known number of clicks, replayed with a short simulated
// delay (mean 60 simulated s at 600x: 0.1 s) and a queue so small that it
// fills: every click is sent exactly once and joins (the TTL is an hour).
TEST_F(ClickctlFeedbackTest, DelayedClickReplaySendsEveryClickOnce) {
  StartServer();
  std::string log;
  int clicks = 0;
  for (int i = 0; i < 240; ++i) {
    const bool click = i % 4 == 0;
    clicks += click ? 1 : 0;
    log += absl::StrCat(click ? 1 : 0, " ", i % 13 + 1, ":1 ", 100 + i % 5, ":1\n");
  }
  const TempFile file("clicks.libsvm", log);
  CommandResult r = Run(absl::StrCat(
      "replay --json --format=libsvm --create_model --model=delayed --feedback_ttl_seconds=3600 "
      "--delayed_clicks --click_delay_mean_seconds=60 --time_scale=600 --max_pending_clicks=4 "
      "--batch_size=3 ",
      file.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string s = LastLine(r.out);
  EXPECT_EQ(JsonText(s, "model"), "delayed");
  EXPECT_EQ(JsonNumber(s, "examples"), 240) << s;
  EXPECT_EQ(JsonNumber(s, "impressions_logged"), 240);
  EXPECT_EQ(JsonNumber(s, "clicks"), clicks);
  EXPECT_EQ(JsonNumber(s, "clicks_sent"), clicks);
  EXPECT_EQ(JsonNumber(s, "clicks_pending"), 0);
  EXPECT_LE(JsonNumber(s, "max_pending"), 4);
  double statuses = 0;
  const nlohmann::ordered_json counts = JsonAt(s, "/statuses");
  ASSERT_TRUE(counts.is_object()) << s;
  for (const auto& [name, count] : counts.items()) statuses += count.get<double>();
  EXPECT_EQ(statuses, clicks) << s;
  EXPECT_EQ(JsonNumber(s, "/statuses/JOINED"), clicks) << s;  // none twice, none expired
  EXPECT_GE(JsonNumber(s, "feedback_requests"), clicks / 3.0);
  // Only the joined clicks have a final label so far: the non-clicks wait
  // for their TTL.
  EXPECT_EQ(JsonNumber(s, "/model_metrics/examples"), clicks) << s;

  // A model without the loop: the replay refuses before any Predict.
  r = Run("replay --json --format=libsvm --delayed_clicks --model=default " + file.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(JsonText(r.out, "code"), "FAILED_PRECONDITION") << r.out;
}

}  // namespace
}  // namespace clickd
