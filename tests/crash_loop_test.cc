// The kill -9 crash loop (issue 4): `clickctl replay --server` streams a
// click log into the real clickd (--update_log_sync=every_request, periodic
// snapshots every 150 ms), the server is killed with SIGKILL 5-305 ms into
// the stream, restarted over the same data directory, and then
//
//   acknowledged <= k <= sent, where k is the restored model's example count
//     (the server may have made durable a batch whose ack never arrived), and
//   the restored model is bit-identical (same state digest) to
//     `clickctl replay --offline` of exactly the first k examples.
//
// The next round resumes the stream at example k. Environment:
// CLICKD_CRASH_ROUNDS (default 20; scripts/soak.sh runs hundreds),
// CLICKD_CRASH_SEED (kill times and batch sizes, default 1) and
// CLICKD_CRASH_EXAMPLES (log length, default 300,000; the loop ends early
// once the whole log is restored) and CLICKD_CRASH_SYNC (the
// --update_log_sync mode, default every_request: a kill -9 is a process
// crash, which interval and none survive too, since written records are in
// the kernel's page cache; only a power loss tells the modes apart, and
// core/persist's fault-injection tests cover that).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::BackgroundCommand;
using ::clickd::testing::CommandResult;
using ::clickd::testing::JsonAt;
using ::clickd::testing::JsonText;
using ::clickd::testing::RunCommand;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  uint64_t parsed = 0;
  return value != nullptr && absl::SimpleAtoi(value, &parsed) ? parsed : fallback;
}

// A synthetic click log in VW format: user, ad and site features, with
// clicks more likely for some (user, ad) pairs.
std::string WriteClickLog(const std::string& path, uint64_t examples) {
  std::mt19937_64 rng(7);
  std::ofstream out(path);
  for (uint64_t i = 0; i < examples; ++i) {
    const uint64_t user = rng() % 500, ad = rng() % 60, site = rng() % 40;
    const bool click = (user + ad) % 7 == 0 ? rng() % 3 == 0 : rng() % 25 == 0;
    out << (click ? 1 : 0) << " |user u" << user << " |ad a" << ad << " c" << ad % 6 << " |site s"
        << site << "\n";
  }
  return path;
}

std::string OfflineDigest(const std::string& log, uint64_t examples) {
  if (examples == 0) {
    // --max_examples=0 means "all": an empty model's digest comes from an
    // empty file instead.
    const std::string empty = ::testing::TempDir() + "/crash_loop_empty.vw";
    std::ofstream{empty};
    return JsonText(
        RunCommand(absl::StrCat(CLICKCTL_PATH, " replay --offline --format=vw --json ", empty),
                   absl::Seconds(300))
            .out,
        "model_digest");
  }
  return JsonText(
      RunCommand(absl::StrCat(CLICKCTL_PATH, " replay --offline --format=vw --json --max_examples=",
                              examples, " ", log),
                 absl::Seconds(300))
          .out,
      "model_digest");
}

// A clickctl child process streaming the log from example `skip`; Finish it
// with a timeout (the helper kills it then).
std::unique_ptr<BackgroundCommand> StartReplay(const std::string& address, const std::string& log,
                                               uint64_t skip, int batch_size) {
  return std::make_unique<BackgroundCommand>(absl::StrCat(
      "exec ", CLICKCTL_PATH, " replay --server=", address,
      " --format=vw --json --skip_examples=", skip, " --batch_size=", batch_size, " ", log));
}

std::unique_ptr<ServerProcess> StartServer(const std::string& data_dir) {
  const char* sync = std::getenv("CLICKD_CRASH_SYNC");
  ServerOptions options;
  options.flags = {"--data_dir=" + data_dir,
                   std::string("--update_log_sync=") + (sync != nullptr ? sync : "every_request"),
                   "--snapshot_interval=150ms", "--keep_snapshots=2"};
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// The restored model's example count, after checking it against what was
// acknowledged and sent and against an offline replay of that many.
uint64_t CheckRestored(const ServerProcess& server, const std::string& log, uint64_t acknowledged,
                       uint64_t sent, int round) {
  auto client = ClickdClient::Create(server.address());
  EXPECT_TRUE(client.ok());
  auto info = (*client)->GetModel("default");
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return acknowledged;
  const uint64_t k = info->updates();
  EXPECT_GE(k, acknowledged) << "round " << round << ": acknowledged updates were lost";
  EXPECT_LE(k, sent) << "round " << round;
  auto digest = (*client)->StateDigest("default");
  EXPECT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(digest.value_or("(none)"), OfflineDigest(log, k))
      << "round " << round << ": the restored model differs from an offline replay of " << k
      << " examples";
  return k;
}

TEST(CrashLoop, KilledServerRestoresExactlyTheDurableUpdates) {
  const uint64_t rounds = EnvOr("CLICKD_CRASH_ROUNDS", 20);
  const uint64_t seed = EnvOr("CLICKD_CRASH_SEED", 1);
  const uint64_t examples = EnvOr("CLICKD_CRASH_EXAMPLES", 300'000);
  std::mt19937_64 rng(seed);
  const std::string dir = absl::StrCat(::testing::TempDir(), "/crash_loop_", getpid());
  std::filesystem::remove_all(dir);
  const std::string log = WriteClickLog(absl::StrCat(dir, ".vw"), examples);

  uint64_t acknowledged = 0;  // examples, from the start of the log
  uint64_t restored = 0;
  uint64_t mid_stream_kills = 0;
  for (uint64_t round = 0; round < rounds && restored < examples; ++round) {
    auto server = StartServer(dir);
    ASSERT_NE(server, nullptr);
    restored = CheckRestored(*server, log, acknowledged, examples, round);
    if (HasFailure()) break;
    const int batch_size = 1 + static_cast<int>(rng() % 200);
    const auto replay = StartReplay(server->address(), log, restored, batch_size);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 300));
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
    const CommandResult result = replay->Finish(absl::Seconds(120));
    const std::string out = result.out + result.err;
    EXPECT_NE(result.exit_code, -1) << "clickctl replay did not finish";
    uint64_t acked = 0;
    ASSERT_TRUE(absl::SimpleAtoi(JsonText(result.out, "acknowledged"), &acked)) << out;
    mid_stream_kills += !JsonAt(result.out, "error").is_null();
    acknowledged = restored + acked;
    std::printf("round %llu: batch %d, restored %llu, acknowledged %llu\n",
                static_cast<unsigned long long>(round), batch_size,
                static_cast<unsigned long long>(restored),
                static_cast<unsigned long long>(acknowledged));
  }
  auto server = StartServer(dir);
  ASSERT_NE(server, nullptr);
  CheckRestored(*server, log, acknowledged, examples, static_cast<int>(rounds));
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
  std::printf("%llu rounds (seed %llu), %llu killed mid-stream\n",
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(mid_stream_kills));
  EXPECT_GT(mid_stream_kills, 0u) << "no kill landed mid-stream; the loop tested nothing";
}

}  // namespace
}  // namespace clickd
