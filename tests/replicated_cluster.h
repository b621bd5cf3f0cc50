// ReplicatedCluster: the real processes of the replication tests: a 3-node
// nats-server JetStream cluster on loopback (file storage, R=3, started by
// the test, stopped by PID) and up to 3 clickd replicas with
// --replication=jetstream, each on its own data directory, started,
// killed (SIGKILL) and restarted by the test.
//
// Thread safety: Address, replica, StartReplica and KillReplica may be
// called concurrently (a writer thread while the test injects faults).
#ifndef CLICKD_TESTS_REPLICATED_CLUSTER_H_
#define CLICKD_TESTS_REPLICATED_CLUSTER_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/nats_cluster.h"
#include "tests/server_process.h"

namespace clickd {
namespace testing {

class ReplicatedCluster {
 public:
  static constexpr int kReplicas = 3;

  // Starts the NATS cluster under TempDir()/replication_<pid>_<name>
  // (ok() says whether it started); no replica yet.
  explicit ReplicatedCluster(const std::string& name);

  NatsCluster& nats() { return *nats_; }
  bool ok() const { return nats_ != nullptr; }
  const std::string& dir() const { return dir_; }

  std::vector<std::string> ReplicaFlags(int i, const std::string& data_dir) const;

  // Starts (or restarts) replica i on its own data directory, with
  // `extra_flags` after ReplicaFlags'.
  bool StartReplica(int i, const std::vector<std::string>& extra_flags = {});
  // SIGKILL, then waits for the exit.
  void KillReplica(int i);

  // The address of replica i, or "" while it is down.
  std::string Address(int i);
  ServerProcess* replica(int i);

 private:
  const std::string dir_;
  std::unique_ptr<NatsCluster> nats_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
};

}  // namespace testing
}  // namespace clickd

#endif  // CLICKD_TESTS_REPLICATED_CLUSTER_H_
