#include "tests/replicated_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace clickd {
namespace testing {

ReplicatedCluster::ReplicatedCluster(const std::string& name)
    : dir_(absl::StrCat(::testing::TempDir(), "/replication_", getpid(), "_", name)) {
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  auto nats = NatsCluster::Start(dir_ + "/nats", 3);
  EXPECT_TRUE(nats.ok()) << nats.status();
  if (nats.ok()) nats_ = *std::move(nats);
  replicas_.resize(kReplicas);
}

std::vector<std::string> ReplicatedCluster::ReplicaFlags(int i, const std::string& data_dir) const {
  return {"--replication=jetstream", "--nats_url=" + nats_->Urls(), "--nats_replicas=3",
          "--replica_id=r" + std::to_string(i), "--data_dir=" + data_dir, "--snapshot_interval=2s",
          "--nats_publish_timeout=2s", "--replication_apply_timeout=5s", "--catch_up_timeout=60s",
          "--shutdown_grace_seconds=2",
          // Small enough for the tests' few hundred records to be purged;
          // state digests often enough to be compared within a test.
          "--replication_retain_records=20", "--replication_state_digest_records=50"};
}

bool ReplicatedCluster::StartReplica(int i, const std::vector<std::string>& extra_flags) {
  ServerOptions options;
  options.flags = ReplicaFlags(i, absl::StrCat(dir_, "/r", i));
  options.flags.insert(options.flags.end(), extra_flags.begin(), extra_flags.end());
  options.ready_timeout = std::chrono::seconds(90);
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  replicas_[i] = *std::move(server);
  return true;
}

void ReplicatedCluster::KillReplica(int i) {
  std::unique_ptr<ServerProcess> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    doomed = std::move(replicas_[i]);
  }
  if (doomed == nullptr) return;
  doomed->Signal(SIGKILL);
  EXPECT_TRUE(doomed->WaitForExit(std::chrono::seconds(20)).has_value());
}

std::string ReplicatedCluster::Address(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  return replicas_[i] == nullptr ? "" : replicas_[i]->address();
}

ServerProcess* ReplicatedCluster::replica(int i) {
  std::lock_guard<std::mutex> lock(mu_);
  return replicas_[i].get();
}

}  // namespace testing
}  // namespace clickd
