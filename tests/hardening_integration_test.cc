// Untrusted traffic and careless operators, round two (issue 33), against
// the real clickd binary: a full disk at startup, the metrics port under
// hostile connections, and the small bounds of N15-N17. Each test starts
// its own server on a free port of 127.0.0.1 and stops it by PID; every
// loop is bounded in count and time, and no assertion depends on how fast
// the machine is (the scrape test compares two scrapes by ratio).
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/child_process.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
namespace fs = std::filesystem;

std::string NewDir(const std::string& tag) {
  static int n = 0;
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/hardening_", tag, "_", getpid(), "_", n++);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::unique_ptr<ClickdClient> Connect(const ServerProcess& server) {
  ClientOptions options;
  options.timeout = absl::Seconds(20);
  auto client = ClickdClient::Create(server.address(), options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

v1::UpdateRequest Clicks(const std::string& model, int seed) {
  v1::UpdateRequest r;
  r.set_model(model);
  auto* imp = r.add_impressions();
  for (int i = 0; i < 4; ++i) {
    auto* c = imp->add_candidates();
    auto* ad = c->mutable_example()->add_namespaces();
    ad->set_name("ad");
    ad->add_features()->set_id((seed + i) % 9);
    c->set_label((seed + i) % 3 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

v1::PredictRequest OneAd(const std::string& model) {
  v1::PredictRequest r;
  r.set_model(model);
  auto* ad = r.add_candidates()->add_namespaces();
  ad->set_name("ad");
  ad->add_features()->set_id(1);
  return r;
}

// A small tmpfs of its own, mounted in a user and mount namespace held by
// a `sleep` (unshare -rm needs no root). Servers run in that namespace
// through nsenter; the test reaches the files through /proc/PID/root.
class SmallDisk {
 public:
  // Mounts a `megabytes` tmpfs on a new directory; nullptr (with the
  // reason in *why) where user namespaces are not allowed.
  static std::unique_ptr<SmallDisk> Mount(int megabytes, std::string* why) {
    auto disk = std::unique_ptr<SmallDisk>(new SmallDisk(NewDir("disk")));
    const std::string script =
        absl::StrCat("mount -t tmpfs -o size=", megabytes, "m tmpfs ", disk->dir_, " && touch ",
                     disk->dir_, "/.mounted && exec sleep 600");
    testing::SpawnOptions spawn;
    spawn.stdout_path = disk->dir_ + ".out";
    auto pid = testing::Spawn({"/usr/bin/unshare", "-rm", "/bin/sh", "-c", script}, spawn);
    if (!pid.ok()) {
      *why = std::string(pid.status().message());
      return nullptr;
    }
    disk->holder_ = *pid;
    for (int i = 0; i < 200 && !fs::exists(disk->Outside("/.mounted")); ++i) {
      if (testing::Reap(*pid).has_value()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (!fs::exists(disk->Outside("/.mounted"))) {
      std::ifstream out(disk->dir_ + ".out");
      *why = std::string(std::istreambuf_iterator<char>(out), {});
      return nullptr;
    }
    // A clickd that runs in the namespace, with the flags it is given.
    disk->wrapper_ = disk->dir_ + ".clickd.sh";
    std::ofstream(disk->wrapper_)
        << "#!/bin/sh\nexec /usr/bin/nsenter --preserve-credentials -U -m -t " << disk->holder_
        << " " << CLICKD_BINARY << " \"$@\"\n";
    fs::permissions(disk->wrapper_, fs::perms::owner_all);
    return disk;
  }

  ~SmallDisk() {
    if (holder_ > 0) {
      kill(holder_, SIGKILL);
      testing::WaitOrKill(holder_, std::chrono::seconds(5));
    }
  }

  // The mount point, as clickd (inside the namespace) sees it.
  const std::string& dir() const { return dir_; }
  // The path of `inside` (under dir()) as this test process reaches it.
  std::string Outside(const std::string& inside) const {
    return absl::StrCat("/proc/", holder_, "/root", dir_, inside);
  }
  const std::string& clickd() const { return wrapper_; }

  // Writes zeros to `inside` until the disk is full; returns the bytes written.
  size_t Fill(const std::string& inside) const {
    const int fd = open(Outside(inside).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return 0;
    const std::string block(64 << 10, '\0');
    size_t total = 0;
    for (int i = 0; i < 100'000; ++i) {  // bounded: 6 GB
      const ssize_t n = write(fd, block.data(), block.size());
      if (n <= 0) break;
      total += n;
    }
    close(fd);
    return total;
  }

 private:
  explicit SmallDisk(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
  std::string wrapper_;
  pid_t holder_ = 0;
};

// N6: a disk filled while the server was down (by one model's log, or by
// anything else) must not stop the next start: every model comes back and
// serves Predict; writes fail with UNAVAILABLE until space is freed. After a
// graceful stop the manifests are current and nothing is rewritten; after
// kill -9 they lag the log, the rewrite fails and the old ones are kept.
void RestartOnAFullDisk(bool kill_first) {
  std::string why;
  auto disk = SmallDisk::Mount(16, &why);
  if (disk == nullptr) GTEST_SKIP() << "no user+mount namespace here: " << why;
  ServerOptions options;
  options.binary = disk->clickd();
  options.flags = {"--data_dir=" + disk->dir() + "/data", "--snapshot_interval=0"};
  {
    auto server = ServerProcess::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    auto client = Connect(**server);
    for (const std::string name : {"a", "b"}) {
      v1::ModelConfig config;
      config.set_name(name);
      ASSERT_TRUE(client->CreateModel(config).ok());
      for (int i = 0; i < 20; ++i) ASSERT_TRUE(client->Update(Clicks(name, i)).ok());
    }
    client.reset();
    if (kill_first) {
      (*server)->Signal(SIGKILL);
      ASSERT_TRUE((*server)->WaitForExit(std::chrono::seconds(20)).has_value());
    } else {
      EXPECT_EQ((*server)->Stop().ToString(), "exit 0") << (*server)->Output();
    }
  }
  ASSERT_GT(disk->Fill("/filler"), 0u);

  auto server = ServerProcess::Start(options);
  ASSERT_TRUE(server.ok()) << "a full disk stopped the start: " << server.status();
  auto client = Connect(**server);
  for (const std::string name : {"a", "b"}) {
    auto predicted = client->Predict(OneAd(name));
    EXPECT_TRUE(predicted.ok()) << name << ": " << predicted.status();
  }
  if (kill_first) {
    for (const std::string name : {"a", "b"}) {
      EXPECT_TRUE(absl::StrContains(
          (*server)->Output(),
          absl::StrCat("model \"", name,
                       "\": kept the update log's manifest as it was: ", "write ")))
          << (*server)->Output();
    }
  }
  // A write fits if it lands in a page the segment already has.
  auto full = client->Update(Clicks("a", 100));
  EXPECT_TRUE(full.ok() || full.status().code() == absl::StatusCode::kUnavailable) << full.status();

  // Space again: writes work without a restart, and survive one.
  fs::remove(disk->Outside("/filler"));
  auto accepted = client->Update(Clicks("b", 101));
  EXPECT_TRUE(accepted.ok()) << accepted.status();
  client.reset();
  EXPECT_EQ((*server)->Stop().ToString(), "exit 0") << (*server)->Output();
  auto again = ServerProcess::Start(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(absl::StrContains((*again)->Output(), "kept the update log's manifest"));
  EXPECT_EQ((*again)->Stop().ToString(), "exit 0") << (*again)->Output();
}

TEST(FullDisk, EveryModelStartsAfterAGracefulStop) { RestartOnAFullDisk(/*kill_first=*/false); }

TEST(FullDisk, EveryModelStartsAfterKillDashNine) { RestartOnAFullDisk(/*kill_first=*/true); }

}  // namespace
}  // namespace clickd
