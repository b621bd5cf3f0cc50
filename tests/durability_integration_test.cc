// Durability with the real clickd binary and real files: --data_dir,
// restarts after SIGTERM and after SIGKILL, damaged snapshots, SnapshotModel,
// periodic snapshots, UpdateStreamAcked and the durability metrics.
//
// Each test starts its own server on a free port of 127.0.0.1 over its own
// data directory and stops it by PID. Every wait is bounded in time; no
// assertion depends on how fast anything runs.
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::RunClickd;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
namespace fs = std::filesystem;

std::string NewDataDir() {
  static int n = 0;
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/durability_test_", getpid(), "_", n++);
  fs::remove_all(dir);
  return dir;
}

std::unique_ptr<ServerProcess> Start(const std::string& data_dir,
                                     std::vector<std::string> flags = {}) {
  ServerOptions options;
  options.flags = {"--data_dir=" + data_dir, "--snapshot_interval=0"};
  options.flags.insert(options.flags.end(), flags.begin(), flags.end());
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<ClickdClient> Connect(const ServerProcess& server) {
  ClientOptions options;
  options.timeout = absl::Seconds(20);
  auto client = ClickdClient::Create(server.address(), options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

v1::ModelConfig Config(const std::string& name) {
  v1::ModelConfig config;
  config.set_name(name);
  auto* cross = config.mutable_hashing()->add_interactions();
  cross->add_namespaces("user");
  cross->add_namespaces("ad");
  return config;
}

// Impressions: a user context and four ads, labels from a fixed rule.
v1::UpdateRequest Clicks(const std::string& model, int seed) {
  v1::UpdateRequest r;
  r.set_model(model);
  auto* imp = r.add_impressions();
  auto* user = imp->mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_features()->set_id(seed % 13);
  for (int i = 0; i < 4; ++i) {
    auto* c = imp->add_candidates();
    auto* ad = c->mutable_example()->add_namespaces();
    ad->set_name("ad");
    ad->add_features()->set_id((seed + i) % 9);
    c->set_label((seed + i) % 3 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

void Learn(const ClickdClient& client, const std::string& model, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    auto response = client.Update(Clicks(model, i));
    ASSERT_TRUE(response.ok()) << response.status();
  }
}

std::string Digest(const ClickdClient& client, const std::string& model) {
  auto digest = client.StateDigest(model);
  EXPECT_TRUE(digest.ok()) << digest.status();
  return digest.ok() ? *digest : "";
}

std::vector<std::string> SnapshotFiles(const std::string& data_dir, const std::string& model) {
  std::vector<std::string> files;
  const fs::path dir = fs::path(data_dir) / "models" / model;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename();
    if (absl::StartsWith(name, "snapshot-") && absl::EndsWith(name, ".snap")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

void FlipByte(const std::string& path, size_t offset_from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-static_cast<std::streamoff>(offset_from_end), std::ios::end);
  char c;
  f.get(c);
  f.seekp(-static_cast<std::streamoff>(offset_from_end), std::ios::end);
  f.put(static_cast<char>(c ^ 0x40));
}

TEST(Durability, SigtermSnapshotsAndRestartRestoresEveryModel) {
  const std::string dir = NewDataDir();
  std::string ctr_digest, default_digest;
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 30);
    Learn(*client, "default", 100, 5);
    ctr_digest = Digest(*client, "ctr");
    default_digest = Digest(*client, "default");
    client.reset();
    EXPECT_EQ(server->Stop().ToString(), "exit 0") << server->Output();
    EXPECT_TRUE(absl::StrContains(server->Output(), "snapshot of \"ctr\" at sequence 30"))
        << server->Output();
  }
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  EXPECT_EQ(Digest(*client, "ctr"), ctr_digest);
  EXPECT_EQ(Digest(*client, "default"), default_digest);
  EXPECT_EQ(client->GetModel("ctr")->updates(), 120u);
  EXPECT_TRUE(absl::StrContains(server->Output(),
                                "restored model \"ctr\" from snapshot 30 + 0 update-log records"))
      << server->Output();
  client.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
}

TEST(Durability, SigkillLosesNoAcknowledgedUpdate) {
  const std::string dir = NewDataDir();
  std::string digest;
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 10);
    auto snapshot = client->SnapshotModel("ctr");
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_EQ(snapshot->sequence(), 10u);
    EXPECT_GT(snapshot->bytes(), 0u);
    Learn(*client, "ctr", 10, 7);  // only in the log
    digest = Digest(*client, "ctr");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  EXPECT_EQ(Digest(*client, "ctr"), digest);
  EXPECT_TRUE(absl::StrContains(server->Output(),
                                "restored model \"ctr\" from snapshot 10 + 7 update-log records"))
      << server->Output();
  // Learning continues where it stopped.
  Learn(*client, "ctr", 17, 1);
  EXPECT_EQ(client->GetModel("ctr")->updates(), 72u);
}

// GET /metrics from the server's metrics port.
std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  auto response = client.Get("/metrics");
  EXPECT_TRUE(response) << httplib::to_string(response.error());
  return response ? response->body : "";
}

TEST(Durability, DamagedNewestSnapshotIsSkippedReportedAndTheOlderOneUsed) {
  const std::string dir = NewDataDir();
  std::string digest;
  {
    auto server = Start(dir, {"--keep_snapshots=2"});
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 5);
    ASSERT_TRUE(client->SnapshotModel("ctr").ok());
    Learn(*client, "ctr", 5, 5);
    ASSERT_TRUE(client->SnapshotModel("ctr").ok());
    Learn(*client, "ctr", 10, 5);
    digest = Digest(*client, "ctr");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  const std::vector<std::string> snapshots = SnapshotFiles(dir, "ctr");
  ASSERT_EQ(snapshots.size(), 2u);
  FlipByte(snapshots.back(), 20);  // inside the newest snapshot's coordinates

  auto port = ::clickd::testing::FindFreePort();
  ASSERT_TRUE(port.ok());
  auto server = Start(dir, {absl::StrCat("--metrics_port=", *port)});
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  EXPECT_EQ(Digest(*client, "ctr"), digest);
  EXPECT_TRUE(absl::StrContains(server->Output(), "\"ctr\": skipped a damaged snapshot"))
      << server->Output();
  EXPECT_TRUE(absl::StrContains(server->Output(), "from snapshot 5 + 10 update-log records"))
      << server->Output();
  const std::string metrics = Scrape(*port);
  EXPECT_TRUE(absl::StrContains(metrics, "clickd_restore_rejected_snapshots{model=\"ctr\"} 1"))
      << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "clickd_update_log_lag_records{model=\"ctr\"} 10"))
      << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "clickd_update_log_sync_duration_seconds_count"))
      << metrics;
}

TEST(Durability, UnrestorableModelStopsStartupNamingIt) {
  const std::string dir = NewDataDir();
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    client.reset();
    EXPECT_EQ(server->Stop().ToString(), "exit 0");
  }
  FlipByte(dir + "/models/ctr/MODEL", 3);
  const auto run = RunClickd({"--data_dir=" + dir});
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "cannot restore model \"ctr\"")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "checksum mismatch")) << run.output;
}

TEST(Durability, ASecondServerOnTheSameDataDirIsRefusedAndTheFirstGoesOn) {
  const std::string dir = NewDataDir();
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  const auto run = RunClickd({"--data_dir=" + dir});
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "is in use by another clickd")) << run.output;
  auto client = Connect(*server);
  EXPECT_TRUE(client->CreateModel(Config("ctr")).ok());
  client.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
  // The lock goes with the process, also after kill -9.
  auto again = Start(dir);
  ASSERT_NE(again, nullptr);
  again->Signal(SIGKILL);
  ASSERT_TRUE(again->WaitForExit(std::chrono::seconds(20)).has_value());
  auto third = Start(dir);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third->Stop().ToString(), "exit 0");
}

// A flipped byte in the middle of the newest log segment is not a torn
// tail: startup stops naming the file and offset, and changes nothing;
// --recover_damaged_log starts with the records before the damage and
// moves the damaged segment aside.
TEST(Durability, DamagedLogStopsStartupUntilRecoveredExplicitly) {
  const std::string dir = NewDataDir();
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 10);  // acknowledged: records 1..10
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  const std::string log_dir = dir + "/models/ctr/log";
  const std::string segment = log_dir + "/00000000000000000001.log";
  FlipByte(segment, fs::file_size(segment) / 2);
  std::ifstream in(segment, std::ios::binary);
  const std::string damaged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  const auto run = RunClickd({"--data_dir=" + dir});
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "log/00000000000000000001.log: damaged at byte "))
      << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "to at least 10 follow the damage")) << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "--recover_damaged_log")) << run.output;
  EXPECT_EQ(fs::file_size(segment), damaged.size());  // nothing cut

  auto server = Start(dir, {"--recover_damaged_log"});
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  const uint64_t updates = client->GetModel("ctr")->updates();
  EXPECT_GT(updates, 0u);
  EXPECT_LT(updates, 40u);
  EXPECT_TRUE(absl::StrContains(server->Output(),
                                "\"ctr\": recovered a damaged update log: "
                                "log/00000000000000000001.log: damaged at byte"))
      << server->Output();
  EXPECT_TRUE(
      absl::StrContains(server->Output(), "moved aside: log/00000000000000000001.log.damaged-"))
      << server->Output();
  int moved = 0;
  for (const auto& entry : fs::directory_iterator(log_dir)) {
    if (absl::StrContains(entry.path().filename().string(), ".damaged-")) {
      ++moved;
      EXPECT_EQ(fs::file_size(entry.path()), damaged.size());
    }
  }
  EXPECT_EQ(moved, 1);
  Learn(*client, "ctr", 10, 1);  // learning continues after the kept records
}

// A last record whose length field reads 2^31-1, above the log's payload
// maximum, is damage, not a torn tail: no torn append can leave such a
// length (issue 33, N13). Startup stops naming the segment; main 298a0d8
// cut the record as a torn tail and lost it silently.
TEST(Durability, ImpossibleLengthInTheLastRecordIsDamage) {
  const std::string dir = NewDataDir();
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 10);  // acknowledged: records 1..10
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  const std::string segment = dir + "/models/ctr/log/00000000000000000001.log";
  std::ifstream in(segment, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  // Records: masked crc (4), length (4), sequence (8), payload; little-endian.
  size_t last = 0;
  for (size_t offset = 0, i = 0; offset + 16 <= bytes.size() && i < 1000; ++i) {
    uint32_t length = 0;
    for (int b = 3; b >= 0; --b)
      length = (length << 8) | static_cast<uint8_t>(bytes[offset + 4 + b]);
    last = offset;
    offset += 16 + length;
  }
  {
    std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(last + 4));
    const char max_int[4] = {'\xff', '\xff', '\xff', '\x7f'};
    f.write(max_int, 4);
  }
  const auto run = RunClickd({"--data_dir=" + dir});
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "log/00000000000000000001.log: damaged at byte "))
      << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "length field reads 2147483647 bytes")) << run.output;
  EXPECT_EQ(fs::file_size(segment), bytes.size());  // nothing cut
}

// log/MANIFEST deleted together with the newest segment: the copy beside
// the log directory (log.MANIFEST) still says what was written, so the
// start stops instead of serving the older records silently (issue 33,
// N13; main 298a0d8 started with none of the 10 acknowledged records).
TEST(Durability, DeletedManifestAndNewestSegmentIsDamage) {
  const std::string dir = NewDataDir();
  {
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
    Learn(*client, "ctr", 0, 10);  // acknowledged: records 1..10
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  const std::string log_dir = dir + "/models/ctr/log";
  ASSERT_TRUE(fs::remove(log_dir + "/MANIFEST"));
  ASSERT_TRUE(fs::remove(log_dir + "/00000000000000000001.log"));
  const auto run = RunClickd({"--data_dir=" + dir});
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output,
                                "log/00000000000000000001.log is missing "
                                "(log.MANIFEST names it as the newest segment)"))
      << run.output;
}

TEST(Durability, SnapshotModelErrors) {
  ServerOptions options;
  auto memory_only = ServerProcess::Start(options);
  ASSERT_TRUE(memory_only.ok()) << memory_only.status();
  auto client = Connect(**memory_only);
  EXPECT_EQ(client->SnapshotModel("default").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->SnapshotModel("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->SnapshotModel("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Durability, PeriodicSnapshotsAndDeletedModelsLeaveNoFiles) {
  const std::string dir = NewDataDir();
  auto server = Start(dir, {"--snapshot_interval=100ms"});
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  ASSERT_TRUE(client->CreateModel(Config("ctr")).ok());
  Learn(*client, "ctr", 0, 3);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (SnapshotFiles(dir, "ctr").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(SnapshotFiles(dir, "ctr").size(), 1u);
  ASSERT_TRUE(client->DeleteModel("ctr").ok());
  EXPECT_TRUE(SnapshotFiles(dir, "ctr").empty());
  EXPECT_FALSE(fs::exists(dir + "/models/ctr/MODEL"));
  client.reset();
  EXPECT_EQ(server->Stop().ToString(), "exit 0");
  auto restarted = Start(dir);
  ASSERT_NE(restarted, nullptr);
  EXPECT_EQ(Connect(*restarted)->GetModel("ctr").status().code(), absl::StatusCode::kNotFound);
}

TEST(Durability, AckedStreamAcknowledgesEachMessageAndStopsAtABadOne) {
  const std::string dir = NewDataDir();
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  auto stream = client->OpenAckedUpdateStream();
  uint64_t acknowledged = 0;
  for (int i = 0; i < 3; ++i) {
    v1::UpdateRequest request = Clicks("default", i);
    request.set_request_id(absl::StrCat("r", i));
    request.set_return_margins(true);
    auto ack = stream->Send(request);
    ASSERT_TRUE(ack.ok()) << ack.status();
    acknowledged += 4;
    EXPECT_EQ(ack->request_id(), absl::StrCat("r", i));
    EXPECT_EQ(ack->applied(), 4u);
    EXPECT_EQ(ack->acknowledged(), acknowledged);
    EXPECT_EQ(ack->margins_size(), 4);
  }
  v1::UpdateRequest bad = Clicks("default", 9);
  bad.mutable_impressions(0)->mutable_candidates(2)->set_label(7);
  auto refused = stream->Send(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "12 examples applied before it"))
      << refused.status();
  EXPECT_EQ(client->GetModel("default")->updates(), 12u);
}

}  // namespace
}  // namespace clickd
