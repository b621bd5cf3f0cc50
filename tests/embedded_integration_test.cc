// The embedded replica (embedded/embedded_replica.h) against the real
// processes: a 3-node nats-server cluster and clickd replicas
// (tests/replicated_cluster.h). At the same applied sequence its state
// digest equals the servers' and its Predict returns the same margins, bit
// for bit, through kill -9 of a replica, models created and deleted while
// it runs, and a whole NATS outage (it keeps serving its last state and
// catches up after). It never writes to the log.
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "embedded/embedded_replica.h"
#include "gtest/gtest.h"
#include "replication/jetstream_log.h"
#include "replication/nats_connection.h"
#include "tests/replicated_cluster.h"

namespace clickd {
namespace {

using ::clickd::testing::ReplicatedCluster;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kWait{60};

v1::UpdateRequest MakeUpdate(const std::string& model, std::mt19937_64& rng, uint64_t index) {
  v1::UpdateRequest request;
  request.set_model(model);
  request.set_idempotency_key(absl::StrCat("embedded-", model, "-", index));
  for (int i = 0; i < 10; ++i) {
    const uint64_t user = rng() % 50, ad = rng() % 20;
    v1::LabeledExample* e = request.add_examples();
    e->set_label((user + ad) % 5 == 0 ? 1.0f : 0.0f);
    for (auto [ns, name] : {std::pair<std::string, std::string>{"user", absl::StrCat("u", user)},
                            {"ad", absl::StrCat("a", ad)}}) {
      v1::Namespace* space = e->mutable_example()->add_namespaces();
      space->set_name(ns);
      space->add_features()->set_name(name);
    }
  }
  return request;
}

v1::PredictRequest MakePredict(const std::string& model, uint64_t min_version) {
  v1::PredictRequest request;
  request.set_model(model);
  request.set_min_model_version(min_version);
  v1::Namespace* user = request.mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_features()->set_name("u7");
  for (int ad = 0; ad < 5; ++ad) {
    v1::Namespace* space = request.add_candidates()->add_namespaces();
    space->set_name("ad");
    space->add_features()->set_name(absl::StrCat("a", ad));
  }
  return request;
}

class EmbeddedReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.ok());
    ASSERT_TRUE(cluster_.StartReplica(0));
    ASSERT_TRUE(cluster_.StartReplica(1));
  }

  std::unique_ptr<ClickdClient> Client(int replica) {
    auto client = ClickdClient::Create(cluster_.Address(replica), {.timeout = absl::Seconds(10)});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  // Sends `count` Updates of `model` to `replica`, each retried (same key)
  // until acknowledged within kWait; the last acknowledged model_version.
  uint64_t Learn(int replica, const std::string& model, int count) {
    std::unique_ptr<ClickdClient> client = Client(replica);
    if (client == nullptr) return 0;
    uint64_t version = 0;
    for (int i = 0; i < count; ++i) {
      const v1::UpdateRequest request = MakeUpdate(model, rng_, next_++);
      const auto give_up = Clock::now() + kWait;
      absl::StatusOr<v1::UpdateResponse> response;
      do {
        response = client->Update(request);
      } while (!response.ok() && Clock::now() < give_up);
      EXPECT_TRUE(response.ok()) << response.status();
      if (response.ok()) version = std::max(version, response->model_version());
    }
    return version;
  }

  // The server replica's answer at `version` or later.
  v1::PredictResponse ServerPredict(int replica, const std::string& model, uint64_t version) {
    std::unique_ptr<ClickdClient> client = Client(replica);
    absl::StatusOr<v1::PredictResponse> response;
    const auto give_up = Clock::now() + kWait;
    do {
      response = client->Predict(MakePredict(model, version));
    } while (!response.ok() && Clock::now() < give_up);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.value_or(v1::PredictResponse());
  }

  // With no write in flight: the embedded replica, caught up with the
  // server replica's `version`, holds the same state and scores alike.
  void ExpectSameAsServer(EmbeddedReplica& embedded, int replica, const std::string& model,
                          uint64_t version) {
    ASSERT_TRUE(embedded.WaitForVersion(version, kWait).ok());
    const v1::PredictResponse server = ServerPredict(replica, model, version);
    v1::PredictResponse mine;
    ASSERT_TRUE(embedded.Predict(MakePredict(model, version), &mine).ok());
    EXPECT_EQ(mine.model_version(), server.model_version());
    ASSERT_EQ(mine.predictions_size(), server.predictions_size());
    for (int i = 0; i < mine.predictions_size(); ++i) {
      // Bit for bit: the same code on the same state.
      EXPECT_EQ(mine.predictions(i).margin(), server.predictions(i).margin()) << i;
      EXPECT_EQ(mine.predictions(i).prediction(), server.predictions(i).prediction()) << i;
    }
    auto server_digest = Client(replica)->StateDigest(model);
    ASSERT_TRUE(server_digest.ok()) << server_digest.status();
    auto digest = embedded.StateDigest(model);
    ASSERT_TRUE(digest.ok()) << digest.status();
    EXPECT_EQ(*digest, *server_digest);
  }

  std::unique_ptr<EmbeddedReplica> OpenEmbedded() {
    auto embedded = EmbeddedReplica::Open(
        {.nats_url = cluster_.nats().Urls(), .catch_up_timeout = std::chrono::seconds(60)});
    EXPECT_TRUE(embedded.ok()) << embedded.status();
    return embedded.ok() ? *std::move(embedded) : nullptr;
  }

  ReplicatedCluster cluster_{"embedded"};
  std::mt19937_64 rng_{7};
  uint64_t next_ = 0;
};

TEST_F(EmbeddedReplicaTest, FollowsTheLogAndAnswersAsTheServersDo) {
  const uint64_t before = Learn(0, "default", 20);
  ASSERT_GT(before, 0u);
  std::unique_ptr<EmbeddedReplica> embedded = OpenEmbedded();
  ASSERT_NE(embedded, nullptr);
  ExpectSameAsServer(*embedded, 1, "default", before);
  EXPECT_EQ(embedded->stats().bootstraps, 1u);

  // A replica killed: the others go on and so does the embedded one.
  cluster_.KillReplica(0);
  const uint64_t after_kill = Learn(1, "default", 10);
  ExpectSameAsServer(*embedded, 1, "default", after_kill);

  // Models created and deleted while it runs.
  v1::ModelConfig config;
  config.set_name("second");
  ASSERT_TRUE(Client(1)->CreateModel(config).ok());
  const uint64_t second = Learn(1, "second", 5);
  ExpectSameAsServer(*embedded, 1, "second", second);
  ASSERT_TRUE(Client(1)->DeleteModel("second").ok());
  const uint64_t deleted = Learn(1, "default", 1);
  ASSERT_TRUE(embedded->WaitForVersion(deleted, kWait).ok());
  v1::PredictResponse gone;
  EXPECT_EQ(embedded->Predict(MakePredict("second", 0), &gone).code(), absl::StatusCode::kNotFound);

  // A NATS outage: it keeps answering from what it applied.
  v1::PredictResponse during_before;
  ASSERT_TRUE(embedded->Predict(MakePredict("default", 0), &during_before).ok());
  ASSERT_TRUE(cluster_.nats().StopAll().ok());
  v1::PredictResponse during;
  ASSERT_TRUE(embedded->Predict(MakePredict("default", 0), &during).ok());
  EXPECT_EQ(during.SerializeAsString(), during_before.SerializeAsString());
  ASSERT_TRUE(cluster_.nats().StartAll().ok());
  const uint64_t after_outage = Learn(1, "default", 5);
  ExpectSameAsServer(*embedded, 1, "default", after_outage);
  EXPECT_TRUE(embedded->stats().nats_connected);
}

// Pinned to one NATS node, and that node stopped while the others
// go on: the replicas learn, publish snapshots and purge the log past what
// the embedded replica applied (it publishes no checkpoint, so retention
// does not wait for it). When the node is back, it finds the gap, restores
// from the newest published snapshot and ends equal to the servers.
TEST_F(EmbeddedReplicaTest, PurgedPastWhileCutOffItRestoresFromTheNewestSnapshot) {
  ASSERT_GT(Learn(0, "default", 5), 0u);
  auto embedded = EmbeddedReplica::Open({.nats_url = cluster_.nats().Url(2),
                                         .use_discovered_servers = false,
                                         .catch_up_timeout = std::chrono::seconds(60)});
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  const uint64_t cut_at = (*embedded)->applied_version();
  ASSERT_TRUE(cluster_.nats().Stop(2).ok());
  // The others learn on, snapshot every 2 s and keep 20 records
  // (ReplicaFlags), until the log's first record is past the embedded
  // replica's (read from the stream itself; bounded).
  NatsConnectionOptions nats_options;
  nats_options.urls = absl::StrCat(cluster_.nats().Url(0), ",", cluster_.nats().Url(1));
  auto nats = NatsConnection::Connect(nats_options);
  ASSERT_TRUE(nats.ok()) << nats.status();
  JetStreamLogOptions log_options;
  log_options.stream = "CLICKD_LOG";
  log_options.subject = "clickd.clickd.log";
  log_options.create_if_missing = false;
  // The connection comes up in the background: retried while NATS does
  // not answer yet (bounded).
  auto log = JetStreamLog::Open(nats->get(), log_options);
  for (int i = 0; i < 30 && absl::IsUnavailable(log.status()); ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    log = JetStreamLog::Open(nats->get(), log_options);
  }
  ASSERT_TRUE(log.ok()) << log.status();
  uint64_t version = 0, first = 0;
  const auto until = Clock::now() + std::chrono::seconds(90);
  for (int round = 0; first <= cut_at + 1 && Clock::now() < until && round < 1000; ++round) {
    version = std::max(version, Learn(round % 2, "default", 10));
    if (auto state = (*log)->State(); state.ok()) first = state->first_sequence;
  }
  ASSERT_GT(first, cut_at + 1) << "the log was never purged past the embedded replica";
  log->reset();
  ASSERT_TRUE(cluster_.nats().Restart(2).ok());
  ASSERT_TRUE((*embedded)->WaitForVersion(version, kWait).ok()) << (*embedded)->stats().broken;
  EXPECT_EQ((*embedded)->stats().bootstraps, 2u);
  ExpectSameAsServer(**embedded, 1, "default", version);
}

TEST_F(EmbeddedReplicaTest, RefusesWhatOnlyAServerDoesAndNamesTheField) {
  ASSERT_GT(Learn(0, "default", 1), 0u);
  std::unique_ptr<EmbeddedReplica> embedded = OpenEmbedded();
  ASSERT_NE(embedded, nullptr);
  v1::PredictResponse response;
  v1::PredictRequest logging = MakePredict("default", 0);
  logging.set_log_impressions(true);
  absl::Status s = embedded->Predict(logging, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("log_impressions"), std::string::npos) << s;
  v1::PredictRequest empty = MakePredict("default", 0);
  empty.clear_candidates();
  s = embedded->Predict(empty, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("candidates"), std::string::npos) << s;
  s = embedded->Predict(MakePredict("missing", 0), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  s = embedded->WaitForVersion(embedded->applied_version() + 1000, std::chrono::milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_EQ(embedded->StateDigest("missing").status().code(), absl::StatusCode::kNotFound);

  // Nothing it did reached the log: a server replica still at its version.
  const uint64_t version = embedded->applied_version();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(ServerPredict(1, "default", 0).model_version(), version);
}

TEST_F(EmbeddedReplicaTest, ALogThatDoesNotExistIsNotFoundAndNotCreated) {
  auto embedded = EmbeddedReplica::Open({.nats_url = cluster_.nats().Urls(),
                                         .stream_prefix = "NOSUCH",
                                         .catch_up_timeout = std::chrono::seconds(10)});
  EXPECT_EQ(embedded.status().code(), absl::StatusCode::kNotFound) << embedded.status();
  EXPECT_NE(embedded.status().message().find("NOSUCH_LOG"), std::string::npos) << embedded.status();
}

// One series' value in `families`, or -1 if there is none.
double MetricValue(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                   std::map<std::string, std::string> labels = {}) {
  labels["stream"] = "CLICKD";
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  return -1;
}

// What a host's exposer collects says what the replica applied and served,
// and once the replica is closed (while a scrape thread collects) the
// collectable the host still holds collects nothing.
TEST_F(EmbeddedReplicaTest, MetricsSayWhatItAppliedAndServedAndNothingOnceClosed) {
  ASSERT_GT(Learn(0, "default", 5), 0u);
  std::unique_ptr<EmbeddedReplica> embedded = OpenEmbedded();
  ASSERT_NE(embedded, nullptr);
  std::shared_ptr<prometheus::Collectable> collectable = embedded->MetricsCollectable();
  const uint64_t opened_at = embedded->applied_version();
  const double applied_at_open =
      MetricValue(collectable->Collect(), "clickd_embedded_records_applied_total");
  ASSERT_GE(applied_at_open, 0);

  const uint64_t version = Learn(1, "default", 4);
  ASSERT_TRUE(embedded->WaitForVersion(version, kWait).ok());
  v1::PredictResponse response;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(embedded->Predict(MakePredict("default", 0), &response).ok());
  EXPECT_EQ(embedded->Predict(MakePredict("missing", 0), &response).code(),
            absl::StatusCode::kNotFound);
  v1::PredictRequest logging = MakePredict("default", 0);
  logging.set_log_impressions(true);
  EXPECT_EQ(embedded->Predict(logging, &response).code(), absl::StatusCode::kFailedPrecondition);

  const std::vector<prometheus::MetricFamily> m = collectable->Collect();
  const double v = static_cast<double>(version);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_applied_sequence"), v);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_stream_sequence"), v);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_lag_records"), 0);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_lag_seconds"), 0);
  // Every record from the open to `version` (the 4 Updates, and whatever
  // else the servers logged meanwhile) applied once.
  EXPECT_EQ(MetricValue(m, "clickd_embedded_records_applied_total"),
            applied_at_open + static_cast<double>(version - opened_at));
  EXPECT_EQ(MetricValue(m, "clickd_embedded_model_version", {{"model", "default"}}), v);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_models"), 1);
  EXPECT_GT(MetricValue(m, "clickd_embedded_model_coordinates", {{"model", "default"}}), 0);
  EXPECT_GT(MetricValue(m, "clickd_embedded_model_bytes", {{"model", "default"}}), 0);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_predictions_total", {{"model", "default"}}), 15);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_predict_calls_total", {{"code", "OK"}}), 3);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_predict_calls_total", {{"code", "NOT_FOUND"}}), 1);
  EXPECT_EQ(
      MetricValue(m, "clickd_embedded_predict_calls_total", {{"code", "FAILED_PRECONDITION"}}), 1);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_predict_calls_total", {{"code", "INTERNAL"}}), -1);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_bootstraps_total"), 1);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_bootstrap_failures_total"), 0);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_broken"), 0);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_nats_connected"), 1);
  EXPECT_EQ(MetricValue(m, "clickd_embedded_rejected_records_total"), 0);
  const std::string text = embedded->MetricsText();
  EXPECT_NE(
      text.find(absl::StrCat("clickd_embedded_model_version{model=\"default\",stream=\"CLICKD\"} ",
                             version, "\n")),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE clickd_embedded_predict_calls_total counter\n"), std::string::npos)
      << text;

  // Closed while another thread scrapes (bounded: at most 30 s).
  std::atomic<bool> emptied{false};
  std::thread scraper([&] {
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    while (!emptied && Clock::now() < give_up) emptied = collectable->Collect().empty();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  embedded.reset();
  scraper.join();
  EXPECT_TRUE(emptied);
  EXPECT_TRUE(collectable->Collect().empty());
}

}  // namespace
}  // namespace clickd
