// NatsCluster: a real nats-server JetStream cluster on 127.0.0.1 for
// integration tests (clickd's --replication=jetstream), started and stopped
// by PID.
//
//   auto cluster = NatsCluster::Start(temp_dir);  // 3 nodes
//   ASSERT_TRUE(cluster.ok()) << cluster.status();
//   ... connect a client to (*cluster)->Urls() ...
//   auto leader = (*cluster)->StreamLeader("CLICKD_LOG");
//   ASSERT_TRUE(leader.ok()) << leader.status();
//   ASSERT_TRUE((*cluster)->Kill(*leader).ok());
//
// Node i is server "n<i>" of cluster "clickd-test": its config is
// `dir`/n<i>.conf, its JetStream store `dir`/n<i>, its log `dir`/n<i>.log
// (appended to across restarts, each start marked by a line of ours). Its
// client, cluster and monitoring ports are free ports of 127.0.0.1 chosen by
// Start() and kept for restarts, so that clients and the other nodes find it
// again. The binary is $NATS_SERVER, else /usr/local/bin/nats-server (the
// pinned version scripts/install_nats.sh installs).
//
// Leadership is read from each node's monitoring endpoint,
// /jsz?accounts=true&streams=true: a node is a leader only while it names
// itself so and a majority of the group (the meta group, or the stream's
// replicas) that answer name it too, so that a lone survivor still calling
// itself leader is not believed.
//
// A node gets SIGKILL if the thread that started it exits (so a crashed test
// leaves no server behind): start and restart nodes from a thread that
// outlives them, such as the test's own.
//
// Thread safety: safe for concurrent use. Node operations (Kill, Stop,
// Restart, StopAll, StartAll) are serialized; the queries only read the
// monitoring endpoints of the nodes running when they start.
#ifndef CLICKD_TESTS_NATS_CLUSTER_H_
#define CLICKD_TESTS_NATS_CLUSTER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "tests/child_process.h"

namespace clickd::testing {

class NatsCluster {
 public:
  // Ports of one node, all on 127.0.0.1.
  struct Ports {
    int client = 0;
    int cluster = 0;
    int monitoring = 0;
  };

  // Starts `nodes` nats-server processes with JetStream (file storage under
  // `dir`, which is created if missing) and waits until every node is up
  // and JetStream has a meta leader. On failure nothing is left running and
  // the message carries the tails of the nodes' logs.
  static absl::StatusOr<std::unique_ptr<NatsCluster>> Start(
      const std::string& dir, int nodes = 3,
      std::chrono::seconds ready_timeout = std::chrono::seconds(30));

  // SIGKILLs and reaps every node still running.
  ~NatsCluster();

  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  // "nats://127.0.0.1:p0,nats://127.0.0.1:p1,...", every node, running or not.
  std::string Urls() const;
  // "nats://127.0.0.1:p<node>".
  std::string Url(int node) const;
  int size() const { return static_cast<int>(ports_.size()); }
  const Ports& ports(int node) const { return ports_[node]; }
  // The node's PID, or -1 while it is not running.
  pid_t pid(int node) const;
  bool running(int node) const { return pid(node) > 0; }

  // Sends SIGKILL and reaps the node. FailedPrecondition if it is not running.
  absl::Status Kill(int node);
  // Sends SIGTERM and waits up to `grace` for the node to exit, then
  // SIGKILLs it. FailedPrecondition if it is not running.
  absl::Status Stop(int node, std::chrono::seconds grace = std::chrono::seconds(10));
  // Starts a stopped node again with its ports and store, and waits until
  // it serves clients (not until JetStream is ready: see WaitReady).
  // FailedPrecondition if it is running.
  absl::Status Restart(int node, std::chrono::seconds timeout = std::chrono::seconds(20));
  // Stops every running node (SIGTERM, all at once).
  absl::Status StopAll(std::chrono::seconds grace = std::chrono::seconds(10));
  // Starts every stopped node (all at once), each as Restart() does.
  absl::Status StartAll(std::chrono::seconds timeout = std::chrono::seconds(20));

  // Waits until every running node answers /healthz with ok (which in 2.9
  // includes being current with the JetStream meta leader and with the
  // streams it hosts) and MetaLeader() succeeds.
  absl::Status WaitReady(std::chrono::seconds timeout);

  // The node leading JetStream's meta group. Unavailable while there is none
  // (or the running nodes disagree).
  absl::StatusOr<int> MetaLeader();
  // The node leading stream `stream` of account $G. NotFound if no running
  // node hosts the stream, Unavailable while it has no leader.
  absl::StatusOr<int> StreamLeader(const std::string& stream);
  // Polls StreamLeader() until it succeeds or `timeout` passes.
  absl::StatusOr<int> WaitStreamLeader(const std::string& stream, std::chrono::seconds timeout);

  // The last `lines` lines of the node's log.
  std::string LogTail(int node, int lines = 30) const;

 private:
  NatsCluster(std::string dir, std::string binary, std::vector<Ports> ports);

  std::string ConfigPath(int node) const;
  std::string LogPath(int node) const;
  // Writes the node's config file.
  absl::Status WriteConfig(int node) const;
  // Forks and execs the node; does not wait for it.
  absl::Status Spawn(int node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `signal` to the running nodes in `nodes` and reaps them, SIGKILLing
  // those still running after `grace`.
  void Terminate(const std::vector<int>& nodes, int signal, std::chrono::seconds grace)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the stopped nodes in `nodes` and waits until each serves clients.
  absl::Status Launch(const std::vector<int>& nodes, std::chrono::seconds timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reaps a node that exited by itself; true if it is running.
  bool Poll(int node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Logs how `node` ended and forgets its pid.
  void NoteEnded(int node, const ExitStatus& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The nodes running now.
  std::vector<int> Running();
  // Every node's log tail, for error messages.
  std::string LogTails(const std::vector<int>& nodes) const;
  // Each running node's health, view of the meta leader and route count,
  // for error messages.
  std::string NodeStates();

  const std::string dir_;
  const std::string binary_;
  const std::vector<Ports> ports_;
  mutable Mutex mu_;
  // pids_[i] is node i's PID, or -1 while it is not running.
  std::vector<pid_t> pids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd::testing

#endif  // CLICKD_TESTS_NATS_CLUSTER_H_
