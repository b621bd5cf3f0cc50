// Replicas that learn as one (issue 11), against real processes: a 3-node
// nats-server JetStream cluster on loopback (file storage, R=3, started by
// the test) and 3 clickd replicas with --replication=jetstream.
//
// A writer sends click batches to the replicas (each batch with its own
// idempotency_key, retried with the same key on any error, on the next
// replica) while the test injects faults. At the end every replica's state
// digest equals the others' and equals `clickctl replay --offline` of the
// acknowledged batches in the order of their model_version (their stream
// sequence): no acknowledged batch was lost and none was learned twice.
//
// The kill loop's rounds, seed and time bound come from
// CLICKD_REPLICATION_ROUNDS (default 6), CLICKD_REPLICATION_SEED (default 1)
// and CLICKD_REPLICATION_MINUTES (default 6); every wait is bounded.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/nats_cluster.h"
#include "tests/replicated_cluster.h"
#include "tests/server_process.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::JsonText;
using ::clickd::testing::NatsCluster;
using ::clickd::testing::ReplicatedCluster;
using ::clickd::testing::RunCommand;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using Clock = std::chrono::steady_clock;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  uint64_t parsed = 0;
  return value != nullptr && absl::SimpleAtoi(value, &parsed) ? parsed : fallback;
}

// One batch of clicks: the VW lines (for the offline replay) and the same
// examples as an UpdateRequest.
struct Batch {
  std::vector<std::string> lines;
  v1::UpdateRequest request;
};

Batch MakeBatch(std::mt19937_64& rng, uint64_t index) {
  Batch b;
  b.request.set_model("default");
  b.request.set_idempotency_key(absl::StrCat("batch-", index));
  const int n = 1 + static_cast<int>(rng() % 40);
  for (int i = 0; i < n; ++i) {
    const uint64_t user = rng() % 300, ad = rng() % 40, site = rng() % 30;
    const int click = (user + ad) % 7 == 0 ? (rng() % 3 == 0) : (rng() % 25 == 0);
    b.lines.push_back(absl::StrCat(click, " |user u", user, " |ad a", ad, " |site s", site));
    v1::LabeledExample* e = b.request.add_examples();
    e->set_label(static_cast<float>(click));
    for (auto [ns, name] : {std::pair<std::string, std::string>{"user", absl::StrCat("u", user)},
                            {"ad", absl::StrCat("a", ad)},
                            {"site", absl::StrCat("s", site)}}) {
      v1::Namespace* space = e->mutable_example()->add_namespaces();
      space->set_name(ns);
      space->add_features()->set_name(name);
    }
  }
  return b;
}

// Sends batches, each until acknowledged (bounded), to replicas in turn.
class Writer {
 public:
  Writer(ReplicatedCluster* cluster, uint64_t seed) : cluster_(cluster), rng_(seed) {}

  // Sends one more batch; false if it was never acknowledged within 60 s.
  bool SendOne() {
    Batch batch = MakeBatch(rng_, batches_.size());
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    for (int attempt = 0; Clock::now() < give_up; ++attempt) {
      const std::string address = cluster_->Address((next_++) % ReplicatedCluster::kReplicas);
      if (address.empty()) continue;
      auto client = ClickdClient::Create(address, {.timeout = absl::Seconds(10)});
      if (!client.ok()) continue;
      auto response = (*client)->Update(batch.request);
      if (response.ok()) {
        versions_.push_back(response->model_version());
        batches_.push_back(std::move(batch));
        return true;
      }
      ++failures_;
      last_error_ = response.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "batch " << batches_.size() << " was never acknowledged; last error "
                  << last_error_;
    return false;
  }

  // The acknowledged batches' lines in stream order.
  std::string WriteLog(const std::string& path) const {
    std::vector<size_t> order(batches_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return versions_[a] < versions_[b]; });
    std::ofstream out(path);
    for (size_t i : order) {
      for (const std::string& line : batches_[i].lines) out << line << "\n";
    }
    return path;
  }

  uint64_t max_version() const {
    return versions_.empty() ? 0 : *std::max_element(versions_.begin(), versions_.end());
  }
  size_t acknowledged() const { return batches_.size(); }
  size_t failures() const { return failures_; }
  const std::vector<uint64_t>& versions() const { return versions_; }

 private:
  ReplicatedCluster* const cluster_;
  std::mt19937_64 rng_;
  uint64_t next_ = 0;
  std::vector<Batch> batches_;
  std::vector<uint64_t> versions_;
  size_t failures_ = 0;
  absl::Status last_error_;
};

std::string OfflineDigest(const std::string& log) {
  return JsonText(
      RunCommand(absl::StrCat(CLICKCTL_PATH, " replay --offline --format=vw --json ", log),
                 absl::Seconds(300))
          .out,
      "model_digest");
}

// Waits until replica i has applied `version` (Predict with
// min_model_version), then returns its state digest.
std::string DigestAt(ReplicatedCluster& cluster, int i, uint64_t version) {
  auto client = ClickdClient::Create(cluster.Address(i), {.timeout = absl::Seconds(10)});
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return "";
  v1::PredictRequest predict;
  predict.set_model("default");
  predict.set_min_model_version(version);
  predict.add_candidates()->add_namespaces()->set_name("user");
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  absl::StatusOr<v1::PredictResponse> response;
  while (Clock::now() < give_up) {
    response = (*client)->Predict(predict);
    if (response.ok()) break;
  }
  EXPECT_TRUE(response.ok()) << "replica " << i << " never reached " << version << ": "
                             << response.status();
  if (response.ok()) EXPECT_GE(response->model_version(), version);
  auto digest = (*client)->StateDigest("default");
  EXPECT_TRUE(digest.ok()) << digest.status();
  return digest.value_or("");
}

void ExpectReplicasEqualOfflineReplay(ReplicatedCluster& cluster, const Writer& writer,
                                      const std::string& label) {
  const std::string log = writer.WriteLog(cluster.dir() + "/" + label + ".vw");
  const std::string offline = OfflineDigest(log);
  ASSERT_FALSE(offline.empty());
  // Acknowledged versions are distinct: one stream record per batch.
  std::vector<uint64_t> versions = writer.versions();
  std::sort(versions.begin(), versions.end());
  EXPECT_EQ(std::adjacent_find(versions.begin(), versions.end()), versions.end())
      << "two batches were acknowledged with the same model_version";
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) {
    if (cluster.Address(i).empty()) continue;
    EXPECT_EQ(DigestAt(cluster, i, writer.max_version()), offline)
        << label << ": replica " << i << " differs from an offline replay of the "
        << writer.acknowledged() << " acknowledged batches in stream order";
    // Equal replicas see no divergence in their checkpoints.
    auto client = ClickdClient::Create(cluster.Address(i));
    ASSERT_TRUE(client.ok());
    auto info = (*client)->GetModel("default");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->has_replication());
    EXPECT_FALSE(info->replication().diverged()) << label << ": " << info->replication().reason();
    EXPECT_EQ(info->replication().peers_disagreeing(), 0u)
        << label << ": replica " << i << ": " << info->replication().reason();
  }
}

TEST(Replication, ReplicasLearnAsOneAndReadYourWrites) {
  ReplicatedCluster cluster("basic");
  ASSERT_TRUE(cluster.ok());
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) ASSERT_TRUE(cluster.StartReplica(i));
  Writer writer(&cluster, 11);
  for (int b = 0; b < 60; ++b) ASSERT_TRUE(writer.SendOne());
  EXPECT_EQ(writer.failures(), 0u);

  // Read-your-writes on another replica; a version far ahead is refused
  // with UNAVAILABLE after --max_version_wait, naming both versions.
  auto client = ClickdClient::Create(cluster.Address(2));
  ASSERT_TRUE(client.ok());
  v1::PredictRequest ahead;
  ahead.set_model("default");
  ahead.set_min_model_version(writer.max_version() + 1000);
  ahead.add_candidates()->add_namespaces()->set_name("user");
  auto refused = (*client)->Predict(ahead);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "min_model_version"))
      << refused.status();

  // A retried batch (same idempotency_key) is learned once: the replay
  // below would differ otherwise.
  Batch again = MakeBatch(*std::make_unique<std::mt19937_64>(99), 0);
  again.request.set_idempotency_key("batch-0");
  auto dup = (*client)->Update(again.request);
  ASSERT_TRUE(dup.ok()) << dup.status();
  EXPECT_EQ(dup->model_version(), writer.versions()[0]);
  EXPECT_TRUE(dup->duplicate());
  EXPECT_EQ(dup->applied(), 0u);  // nothing learned now

  ExpectReplicasEqualOfflineReplay(cluster, writer, "basic");

  // Both streaming RPCs go through the stream too: their versions are
  // stream sequences, and every replica ends equal.
  std::mt19937_64 stream_rng(21);
  auto c1 = ClickdClient::Create(cluster.Address(1));
  ASSERT_TRUE(c1.ok());
  auto acked = (*c1)->OpenAckedUpdateStream();
  uint64_t last = writer.max_version();
  for (int m = 0; m < 5; ++m) {
    auto ack = acked->Send(MakeBatch(stream_rng, 1000 + m).request);
    ASSERT_TRUE(ack.ok()) << ack.status();
    EXPECT_GT(ack->model_version(), last);
    last = ack->model_version();
  }
  ASSERT_TRUE(acked->Finish().ok());
  auto streamed = (*c1)->OpenUpdateStream();
  for (int m = 0; m < 5; ++m) ASSERT_TRUE(streamed->Write(MakeBatch(stream_rng, 2000 + m).request));
  auto summary = streamed->Finish();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->requests(), 5u);
  EXPECT_GT(summary->model_version(), last);
  const std::string digest0 = DigestAt(cluster, 0, summary->model_version());
  for (int i = 1; i < ReplicatedCluster::kReplicas; ++i) {
    EXPECT_EQ(DigestAt(cluster, i, summary->model_version()), digest0) << "replica " << i;
  }

  // Creates and deletes go through the stream: every replica agrees.
  auto c0 = ClickdClient::Create(cluster.Address(0));
  ASSERT_TRUE(c0.ok());
  v1::ModelConfig config;
  config.set_name("second");
  config.set_optimizer("ftrl");
  config.set_loss("logistic");
  ASSERT_TRUE((*c0)->CreateModel(config).ok());
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) {
    auto c = ClickdClient::Create(cluster.Address(i));
    ASSERT_TRUE(c.ok());
    // Reading the newest version makes sure the create is applied there.
    auto models = [&]() -> size_t {
      for (int t = 0; t < 100; ++t) {
        auto list = (*c)->ListModels();
        if (list.ok() && list->size() == 2) return 2;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      return 0;
    }();
    EXPECT_EQ(models, 2u) << "replica " << i;
  }
  EXPECT_EQ((*c0)->CreateModel(config).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*c0)->DeleteModel("second").ok());
  EXPECT_EQ((*c0)->DeleteModel("second").code(), absl::StatusCode::kNotFound);
}

TEST(Replication, NatsDownRefusesUpdatesAndKeepsServingPredict) {
  ReplicatedCluster cluster("nats_down");
  ASSERT_TRUE(cluster.ok());
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) ASSERT_TRUE(cluster.StartReplica(i));
  Writer writer(&cluster, 12);
  for (int b = 0; b < 20; ++b) ASSERT_TRUE(writer.SendOne());

  ASSERT_TRUE(cluster.nats().StopAll().ok());
  auto client = ClickdClient::Create(cluster.Address(1), {.timeout = absl::Seconds(10)});
  ASSERT_TRUE(client.ok());
  std::mt19937_64 rng(5);
  Batch refused_batch = MakeBatch(rng, 1'000'000);
  const auto start = Clock::now();
  auto refused = (*client)->Update(refused_batch.request);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "NATS")) << refused.status();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));
  v1::PredictRequest predict;
  predict.set_model("default");
  predict.add_candidates()->add_namespaces()->set_name("user");
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) {
    auto c = ClickdClient::Create(cluster.Address(i));
    ASSERT_TRUE(c.ok());
    auto p = (*c)->Predict(predict);
    EXPECT_TRUE(p.ok()) << "replica " << i << ": " << p.status();
  }

  ASSERT_TRUE(cluster.nats().StartAll().ok());
  const absl::Status ready = cluster.nats().WaitReady(std::chrono::seconds(90));
  ASSERT_TRUE(ready.ok()) << ready;
  for (int b = 0; b < 20; ++b) ASSERT_TRUE(writer.SendOne());
  ExpectReplicasEqualOfflineReplay(cluster, writer, "nats_down");
}

// An Update waiting for the replicated log holds no worker: with one
// worker and every NATS node frozen (SIGSTOP), Updates wait for their
// acknowledgement (--nats_publish_timeout=60s) while a Predict that needs
// the worker is answered within its 10 s deadline. (When a replicated
// Update held its worker for the whole publish, this Predict waited behind
// the first Update's 60 s.)
TEST(Replication, UpdatesWaitingForTheLogHoldNoWorker) {
  ReplicatedCluster cluster("no_worker_held");
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.StartReplica(0, {"--worker_threads=1", "--nats_publish_timeout=60s"}));
  Writer writer(&cluster, 13);
  ASSERT_TRUE(writer.SendOne());

  NatsCluster& nats = cluster.nats();
  auto signal_nats = [&](int signal) {
    for (int n = 0; n < nats.size(); ++n) {
      if (nats.pid(n) > 0) kill(nats.pid(n), signal);
    }
  };
  signal_nats(SIGSTOP);
  absl::Cleanup thaw = [&] { signal_nats(SIGCONT); };

  std::mutex mu;
  std::vector<Clock::time_point> update_done;
  std::vector<std::thread> updates;
  for (int i = 0; i < 3; ++i) {
    updates.emplace_back([&, i] {
      auto client = ClickdClient::Create(cluster.Address(0), {.timeout = absl::Seconds(90)});
      ASSERT_TRUE(client.ok());
      std::mt19937_64 rng(100 + i);
      Batch batch = MakeBatch(rng, 2'000'000 + i);
      auto response = (*client)->Update(batch.request);
      std::lock_guard<std::mutex> lock(mu);
      update_done.push_back(Clock::now());
    });
  }
  // Gives the Updates time to reach the server first.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Too large to be scored on a gRPC thread (--max_quiet_inline_predict_features).
  v1::PredictRequest predict;
  predict.set_model("default");
  for (int c = 0; c < 8; ++c) {
    v1::Namespace* big = predict.add_candidates()->add_namespaces();
    big->set_name("user");
    for (int f = 0; f < 2500; ++f) big->add_features()->set_name(absl::StrCat("u", f));
  }
  auto client = ClickdClient::Create(cluster.Address(0), {.timeout = absl::Seconds(10)});
  ASSERT_TRUE(client.ok());
  auto scored = (*client)->Predict(predict);
  const auto predict_done = Clock::now();
  EXPECT_TRUE(scored.ok()) << "a Predict behind Updates that wait for NATS: " << scored.status();
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(update_done.empty())
        << "the Predict waited for an Update that waits for NATS: it held the only worker";
  }
  std::move(thaw).Invoke();
  for (std::thread& t : updates) t.join();
  EXPECT_EQ(update_done.size(), 3u);
  for (const auto& done : update_done) EXPECT_GT(done, predict_done);
}

TEST(Replication, KillLoopLosesNothingAndAppliesNothingTwice) {
  const uint64_t rounds = EnvOr("CLICKD_REPLICATION_ROUNDS", 6);
  const uint64_t seed = EnvOr("CLICKD_REPLICATION_SEED", 1);
  std::mt19937_64 rng(seed);
  ReplicatedCluster cluster("kill_loop");
  ASSERT_TRUE(cluster.ok());
  for (int i = 0; i < ReplicatedCluster::kReplicas; ++i) ASSERT_TRUE(cluster.StartReplica(i));
  Writer writer(&cluster, seed * 1000 + 1);
  const auto give_up = Clock::now() + std::chrono::minutes(EnvOr("CLICKD_REPLICATION_MINUTES", 6));

  for (uint64_t round = 0; round < rounds && Clock::now() < give_up; ++round) {
    // The writer runs through the fault.
    std::atomic<bool> stop{false};
    std::atomic<bool> writer_ok{true};
    std::thread writing([&] {
      while (!stop.load() && writer_ok.load()) {
        if (!writer.SendOne()) writer_ok = false;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));
    const int fault = static_cast<int>(round % 3);
    if (fault == 0) {
      const int victim = static_cast<int>(rng() % ReplicatedCluster::kReplicas);
      cluster.KillReplica(victim);
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 500));
      ASSERT_TRUE(cluster.StartReplica(victim));
    } else if (fault == 1) {
      auto leader = cluster.nats().StreamLeader("CLICKD_LOG");
      ASSERT_TRUE(leader.ok()) << leader.status();
      ASSERT_TRUE(cluster.nats().Kill(*leader).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng() % 1000));
      ASSERT_TRUE(cluster.nats().Restart(*leader).ok());
    } else {
      ASSERT_TRUE(cluster.nats().StopAll().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng() % 1000));
      ASSERT_TRUE(cluster.nats().StartAll().ok());
    }
    // A liveness bound: after a full restart JetStream took 6-22 s here to
    // elect its meta leader with the machine busy, and once over 30 s in CI.
    const absl::Status ready = cluster.nats().WaitReady(std::chrono::seconds(90));
    ASSERT_TRUE(ready.ok()) << "round " << round << ": " << ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    writing.join();
    ASSERT_TRUE(writer_ok.load()) << "round " << round;
    std::cerr << "round " << round << " fault " << fault << ": " << writer.acknowledged()
              << " batches acknowledged, " << writer.failures() << " failed attempts so far\n";
  }
  ExpectReplicasEqualOfflineReplay(cluster, writer, "kill_loop");
}

TEST(Replication, NewReplicaBootstrapsFromAPublishedSnapshot) {
  ReplicatedCluster cluster("bootstrap");
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.StartReplica(0));
  ASSERT_TRUE(cluster.StartReplica(1));
  Writer writer(&cluster, 13);
  for (int b = 0; b < 30; ++b) ASSERT_TRUE(writer.SendOne());
  // Two published snapshots let the log be purged below the older one.
  auto admin = ClickdClient::Create(cluster.Address(0));
  ASSERT_TRUE(admin.ok());
  auto first = (*admin)->SnapshotModel("default");
  ASSERT_TRUE(first.ok()) << first.status();
  for (int b = 0; b < 30; ++b) ASSERT_TRUE(writer.SendOne());
  auto second = (*admin)->SnapshotModel("default");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GT(second->sequence(), first->sequence());
  for (int b = 0; b < 10; ++b) ASSERT_TRUE(writer.SendOne());

  // Replica 2 has an empty volume, and the stream no longer starts at 1.
  ASSERT_TRUE(cluster.StartReplica(2));
  EXPECT_TRUE(
      absl::StrContains(cluster.replica(2)->Output(), "from published snapshot at sequence"))
      << cluster.replica(2)->Output();
  ExpectReplicasEqualOfflineReplay(cluster, writer, "bootstrap");

  // A restarted replica resumes from its own snapshot.
  cluster.KillReplica(0);
  ASSERT_TRUE(cluster.StartReplica(0));
  EXPECT_TRUE(absl::StrContains(cluster.replica(0)->Output(), "from local snapshot"))
      << cluster.replica(0)->Output();
  for (int b = 0; b < 10; ++b) ASSERT_TRUE(writer.SendOne());
  ExpectReplicasEqualOfflineReplay(cluster, writer, "bootstrap_restart");
}

TEST(Replication, FlagsAreCheckedBeforeAnythingStarts) {
  using ::clickd::testing::RunClickd;
  auto run = RunClickd({"--replication=raft"});
  EXPECT_EQ(run.status.ToString(), "exit 2");
  EXPECT_TRUE(absl::StrContains(run.output, "--replication=raft is not one of none, jetstream"))
      << run.output;
  run = RunClickd({"--replication=jetstream"});
  EXPECT_TRUE(absl::StrContains(run.output, "--replication=jetstream needs --nats_url"))
      << run.output;
  run = RunClickd({"--nats_url=nats://127.0.0.1:1"});
  EXPECT_TRUE(absl::StrContains(run.output, "--nats_url needs --replication=jetstream"))
      << run.output;
  run =
      RunClickd({"--replication=jetstream", "--nats_url=nats://127.0.0.1:1", "--nats_replicas=7"});
  EXPECT_TRUE(absl::StrContains(run.output, "--nats_replicas=7 must be in [1, 5]")) << run.output;
}

// A stream that cannot be created as configured fails the start at once,
// with JetStream's reason, instead of being retried for --catch_up_timeout
// as if NATS were still starting: prefixes that differ only in case share
// subjects (clickd.<prefix in lower case>.log), which JetStream refuses.
TEST(Replication, StreamThatCannotBeCreatedFailsTheStartAtOnce) {
  const std::string dir = ::testing::TempDir() + "/replication_overlap_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  auto nats = NatsCluster::Start(dir + "/nats", 1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  const std::vector<std::string> common = {"--replication=jetstream",
                                           "--nats_url=" + (*nats)->Urls(), "--nats_replicas=1",
                                           "--catch_up_timeout=10m"};
  {
    ServerOptions options;
    options.flags = common;
    options.flags.push_back("--nats_stream=CTR");
    options.flags.push_back("--data_dir=" + dir + "/upper");
    auto first = ServerProcess::Start(std::move(options));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ((*first)->Stop().ToString(), "exit 0");
  }
  std::vector<std::string> flags = common;
  flags.push_back("--nats_stream=ctr");
  flags.push_back("--data_dir=" + dir + "/lower");
  // Killed after 60 s if it waits: far less than --catch_up_timeout.
  const auto run = ::clickd::testing::RunClickd(flags, std::chrono::seconds(60));
  EXPECT_EQ(run.status.ToString(), "exit 2") << run.output;
  EXPECT_TRUE(absl::StrContains(run.output, "create stream ctr_LOG")) << run.output;
  EXPECT_FALSE(absl::StrContains(run.output, "waiting for NATS")) << run.output;
}

}  // namespace
}  // namespace clickd
