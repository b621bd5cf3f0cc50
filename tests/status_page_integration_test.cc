// The status page (issue 13) in a real browser: the real clickd binary
// learns from `clickctl replay` and answers `clickctl loadgen` predictions
// while headless Chromium loads http://127.0.0.1:PORT/ and runs its script.
// The dumped DOM must list the model and show charts with points (the page
// writes how many points each chart drew in data-points). A screenshot goes
// to $CLICKD_STATUS_SCREENSHOT if set (docs/img/status_page.png is made so),
// else to the test's temporary directory.
//
// Chromium is Debian's `chromium` (scripts/install_deps.sh); $CHROMIUM
// names another binary.
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server_process.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::FindFreePort;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using std::chrono::steady_clock;

constexpr int kRounds = 12;
constexpr int kExamplesPerRound = 400;

// Runs a shell command, killed after `seconds`; returns its stdout.
std::string RunCommand(const std::string& command, int seconds) {
  return ::clickd::testing::RunCommand(command, absl::Seconds(seconds)).out;
}

// A synthetic click log in VW format: some ads and some users click more
// (a linear signal, so the model's AUC climbs as it learns).
void WriteClickLog(const std::string& path, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(0, 1);
  std::ofstream out(path);
  for (int i = 0; i < kExamplesPerRound; ++i) {
    const uint64_t user = rng() % 300, ad = rng() % 40;
    const double p = 0.03 + (ad % 8 == 0 ? 0.3 : 0) + (user % 5 == 0 ? 0.15 : 0);
    out << (uniform(rng) < p ? 1 : 0) << " |user u" << user << " |ad a" << ad << "\n";
  }
}

std::string Chromium() {
  const char* chromium = std::getenv("CHROMIUM");
  return chromium != nullptr ? chromium : "chromium";
}

// Runs headless Chromium on `url` with `args` (a fresh profile each time).
std::string RunChromium(const std::string& url, const std::string& args) {
  const std::string profile = absl::StrCat(::testing::TempDir(), "/status_chromium_", getpid());
  std::filesystem::remove_all(profile);
  const std::string out =
      RunCommand(absl::StrCat(Chromium(),
                              " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                              "--no-first-run --user-data-dir=",
                              profile, " ", args, " ", url, " 2>/dev/null"),
                 120);
  std::filesystem::remove_all(profile);
  return out;
}

// The value of attribute `name` in the first element of `dom` whose tag
// text contains `marker`, or "".
std::string Attribute(const std::string& dom, const std::string& marker, const std::string& name) {
  const size_t at = dom.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = dom.rfind('<', at), end = dom.find('>', at);
  const std::string tag = dom.substr(start, end - start);
  std::smatch match;
  if (!std::regex_search(tag, match, std::regex(name + "=\"([^\"]*)\""))) return "";
  return match[1];
}

int AsInt(const std::string& text) { return text.empty() ? -1 : std::atoi(text.c_str()); }

// Points of model "default" with a logloss (after its first examples)
// that /status.json reports (-1 on failure).
int ServerPoints(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5, 0);
  auto response = client.Get("/status.json");
  if (!response || response->status != 200) return -1;
  const auto parsed = nlohmann::json::parse(response->body, nullptr, false);
  if (parsed.is_discarded() || parsed["models"].empty()) return -1;
  int points = 0;
  for (const auto& logloss : parsed["models"][0]["points"]["recent_logloss"]) {
    if (logloss.is_number()) ++points;
  }
  return points;
}

TEST(StatusPage, ChromiumShowsTheModelAndItsChartsWhileItLearns) {
  ASSERT_EQ(std::system(absl::StrCat(Chromium(), " --version >/dev/null 2>&1").c_str()), 0)
      << Chromium() << " is not installed: run scripts/install_deps.sh";
  auto metrics_port = FindFreePort();
  ASSERT_TRUE(metrics_port.ok()) << metrics_port.status();
  ServerOptions options;
  options.flags = {absl::StrCat("--metrics_port=", *metrics_port), "--max_open_streams=9",
                   "--max_queued_calls=99"};
  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();

  // Learns and predicts in rounds, ~0.5 s apart, for the whole test.
  std::thread learner([&] {
    std::mt19937_64 rng(13);
    for (int round = 0; round < kRounds; ++round) {
      const std::string log =
          absl::StrCat(::testing::TempDir(), "/status_page_", getpid(), "_", round, ".vw");
      WriteClickLog(log, rng);
      RunCommand(absl::StrCat(CLICKCTL_PATH, " replay --server=", address,
                              " --format=vw --batch_size=50 ", log, " >/dev/null 2>&1"),
                 60);
      RunCommand(absl::StrCat(CLICKCTL_PATH, " loadgen --server=", address,
                              " --method=predict --duration_s=0.3 --warmup_s=0 --qps=200 "
                              ">/dev/null 2>&1"),
                 60);
      std::filesystem::remove(log);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });

  // The server samples every 2 s: wait for 3 points with a logloss.
  int points = -1;
  const auto deadline = steady_clock::now() + std::chrono::seconds(60);
  while ((points = ServerPoints(*metrics_port)) < 3 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_GE(points, 3) << "the server's ring did not fill";

  const std::string url = absl::StrCat("http://127.0.0.1:", *metrics_port, "/");
  // Virtual time: the page polls 2 s apart, so a few polls run.
  const std::string dom = RunChromium(url, "--virtual-time-budget=7000 --dump-dom");
  EXPECT_EQ(Attribute(dom, "<body", "data-state"), "ok") << dom;
  EXPECT_GE(AsInt(Attribute(dom, "<body", "data-polls")), 1) << dom;
  EXPECT_EQ(Attribute(dom, "<body", "data-models"), "1") << dom;
  EXPECT_NE(dom.find("<section data-model=\"default\">"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<h2>default</h2>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("ftrl (alpha=0.1"), std::string::npos) << dom;
  // The server's load beside its limits, as the flags set them.
  EXPECT_EQ(Attribute(dom, "<div id=\"load\"", "data-max-open-streams"), "9") << dom;
  EXPECT_EQ(Attribute(dom, "<div id=\"load\"", "data-max-queued-calls"), "99") << dom;
  EXPECT_NE(dom.find("stream(s) open"), std::string::npos) << dom;
  for (const char* chart : {"logloss", "auc", "calibration"}) {
    EXPECT_GE(AsInt(Attribute(dom, absl::StrCat("data-chart=\"", chart, "\""), "data-points")), 3)
        << chart << "\n"
        << dom;
  }

  const char* wanted = std::getenv("CLICKD_STATUS_SCREENSHOT");
  const std::string png =
      wanted != nullptr ? std::string(wanted)
                        : absl::StrCat(::testing::TempDir(), "/status_page_", getpid(), ".png");
  std::filesystem::remove(png);
  RunChromium(url, absl::StrCat("--virtual-time-budget=5000 --hide-scrollbars ",
                                "--window-size=1240,560 --screenshot=", png));
  std::ifstream in(png, std::ios::binary);
  std::string header(8, '\0');
  in.read(header.data(), header.size());
  EXPECT_EQ(header, "\x89PNG\r\n\x1a\n") << "no screenshot at " << png;
  if (wanted == nullptr) std::filesystem::remove(png);

  learner.join();
  EXPECT_EQ((*server)->Stop().ToString(), "exit 0");
}

}  // namespace
}  // namespace clickd
