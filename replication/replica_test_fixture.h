// The fixture of the Replica tests (replica_test.cc, replica_feedback_test.cc):
// a real single-node nats-server with JetStream (R=1 streams; started on a
// free 127.0.0.1 port, stopped by its PID) and replicas in one process,
// each with its own memory-only registry and its own NATS connection,
// applying one stream.
#ifndef CLICKD_REPLICATION_REPLICA_TEST_FIXTURE_H_
#define CLICKD_REPLICATION_REPLICA_TEST_FIXTURE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "replication/nats_test_server.h"
#include "replication/replica.h"

namespace clickd {
namespace replica_test {

using ::clickd::testing::NatsTestServer;
using ::clickd::testing::StopServerAndAwaitDisconnected;
using std::chrono::milliseconds;

// Generous: sanitizer builds on a shared 2-core machine are slow. Bounds,
// not expectations.
inline constexpr milliseconds kWait{30000};

// One replica with everything it owns.
struct Node {
  std::unique_ptr<NatsConnection> nats;
  std::unique_ptr<JetStreamLog> log;
  std::unique_ptr<SnapshotStore> snapshots;
  std::unique_ptr<ModelRegistry> registry;
  ReplicaStartReport report;
  std::unique_ptr<Replica> replica;
};

// Examples whose features and labels follow from `seed`; kept alive while
// the TrainingExamples pointing at them are used.
struct Batch {
  std::vector<Example> examples;
  std::vector<TrainingExample> training;
};

inline Batch MakeBatch(uint64_t seed, int size) {
  Batch b;
  b.examples.resize(size);
  for (int i = 0; i < size; ++i) {
    const uint64_t x = seed * 7919 + static_cast<uint64_t>(i) * 104729;
    Example& e = b.examples[i];
    e.namespaces.push_back({"user", {Feature::Named(absl::StrCat("u", x % 97))}});
    e.namespaces.push_back({"ad", {Feature::Named(absl::StrCat("a", x % 13))}});
  }
  for (int i = 0; i < size; ++i) {
    const float label = (seed + static_cast<uint64_t>(i)) % 5 == 0 ? 1.0f : 0.0f;
    b.training.push_back(TrainingExample{nullptr, &b.examples[i], label, 1.0f});
  }
  return b;
}

inline ModelConfig Config(const std::string& name) {
  ModelConfig config;
  config.name = name;
  config.num_shards = 4;
  return config;
}

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }
  // Replicas stop first, then the server, then the connections go
  // (nats_test_server.h says why in that order).
  void TearDown() override {
    std::vector<const NatsConnection*> connections;
    for (auto& node : nodes_) {
      node->replica.reset();
      if (node->nats != nullptr) connections.push_back(node->nats.get());
    }
    StopServerAndAwaitDisconnected(server_, connections);
    nodes_.clear();
  }

  // Starts a replica on the test's streams (owned by the test). `data_dir`
  // "": no local snapshots.
  // `configure`, if set, changes the replica's options last.
  Node* StartNode(const std::string& id, const std::string& data_dir = "",
                  std::function<void(ReplicaOptions*)> configure = nullptr) {
    Node* node = nodes_.emplace_back(std::make_unique<Node>()).get();
    NatsConnectionOptions nats_options;
    nats_options.urls = server_.url();
    nats_options.name = id;
    nats_options.timeout = milliseconds(5000);
    auto nats = NatsConnection::Connect(nats_options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    if (!nats.ok()) return nullptr;
    node->nats = *std::move(nats);
    JetStreamLogOptions log_options;
    log_options.stream = "REPLTEST_LOG";
    log_options.subject = "clickd.repltest.log";
    log_options.replicas = 1;
    auto log = JetStreamLog::Open(node->nats.get(), log_options);
    EXPECT_TRUE(log.ok()) << log.status();
    if (!log.ok()) return nullptr;
    node->log = *std::move(log);
    auto snapshots = SnapshotStore::Open(node->nats->jetstream(), "REPLTEST_SNAPSHOTS",
                                         "clickd.repltest.snapshots", 1, milliseconds(5000));
    EXPECT_TRUE(snapshots.ok()) << snapshots.status();
    if (!snapshots.ok()) return nullptr;
    node->snapshots = *std::move(snapshots);
    node->registry = std::make_unique<ModelRegistry>();
    ReplicaOptions options;
    options.data_dir = data_dir;
    options.replica_id = id;
    options.publish_timeout = milliseconds(5000);
    options.apply_timeout = kWait;
    options.snapshot_interval = milliseconds(0);  // only when a test asks
    options.retain_records = 0;                   // purges as far as the snapshots allow
    options.checkpoint_subject = "clickd.repltest.checkpoints";
    options.checkpoint_interval = milliseconds(100);
    options.state_digest_records = 5;
    if (configure) configure(&options);
    auto replica = Replica::Start(node->registry.get(), node->log.get(), node->snapshots.get(),
                                  options, &node->report);
    EXPECT_TRUE(replica.ok()) << replica.status();
    if (!replica.ok()) return nullptr;
    node->replica = *std::move(replica);
    return node;
  }

  // Waits until `node` has applied everything in the stream now.
  static void CatchUp(Node& node) {
    const absl::Status s = node.replica->CatchUp(kWait);
    ASSERT_TRUE(s.ok()) << s;
  }

  // The canonical bytes of `model` on `node` ("" if absent).
  static std::string StateOf(Node& node, const std::string& model) {
    std::shared_ptr<ServedModel> served = node.registry->Get(model);
    return served == nullptr ? "" : served->model().SerializeState();
  }

  static uint64_t UpdatesOf(Node& node, const std::string& model) {
    std::shared_ptr<ServedModel> served = node.registry->Get(model);
    return served == nullptr ? 0 : served->model().Updates();
  }

  // Creates `name` through `via` and waits until every node in `all` has it.
  static uint64_t CreateEverywhere(Node& via, const std::vector<Node*>& all,
                                   const std::string& name) {
    return CreateEverywhere(via, all, Config(name));
  }
  static uint64_t CreateEverywhere(Node& via, const std::vector<Node*>& all,
                                   const ModelConfig& config) {
    const std::string& name = config.name;
    auto created = via.replica->Create(config);
    EXPECT_TRUE(created.ok()) << created.status();
    const uint64_t sequence = via.replica->model_version(name);
    EXPECT_GT(sequence, 0u);
    for (Node* node : all) EXPECT_TRUE(node->replica->AwaitApplied(sequence, kWait).ok());
    return sequence;
  }

  NatsTestServer server_{"replica_test"};
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace replica_test
}  // namespace clickd

#endif  // CLICKD_REPLICATION_REPLICA_TEST_FIXTURE_H_
