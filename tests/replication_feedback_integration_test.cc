// The impression-to-click loop of replicas that learn as one (issue 15),
// against real processes: a 3-node nats-server JetStream cluster and two
// clickd replicas (tests/replicated_cluster.h). Impressions logged by a
// Predict on either replica get ids from one sequence; a label sent to any
// replica joins any replica's impression, once; the server clocks expire
// unlabelled impressions with no traffic; and a replica killed with SIGKILL
// comes back with the join buffer, so labels for impressions logged before
// the crash still join. At the end both replicas hold the same state.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/replicated_cluster.h"

namespace clickd {
namespace {

using ::clickd::testing::ReplicatedCluster;
using Clock = std::chrono::steady_clock;

v1::ModelConfig LoopConfig(const std::string& name, int64_t ttl_seconds) {
  v1::ModelConfig c;
  c.set_name(name);
  c.mutable_feedback()->set_ttl_seconds(ttl_seconds);
  c.mutable_feedback()->set_policy("wait_negative");
  return c;
}

v1::PredictRequest Impressions(const std::string& model, int ads, int first_ad) {
  v1::PredictRequest r;
  r.set_model(model);
  r.set_log_impressions(true);
  auto* ctx = r.mutable_context()->add_namespaces();
  ctx->set_name("site");
  ctx->add_features()->set_name("news");
  for (int a = 0; a < ads; ++a) {
    auto* ns = r.add_candidates()->add_namespaces();
    ns->set_name("ad");
    ns->add_features()->set_id(first_ad + a);
  }
  return r;
}

v1::FeedbackRequest Click(const std::string& model, uint64_t id, const std::string& key = "") {
  v1::FeedbackRequest r;
  r.set_model(model);
  r.set_idempotency_key(key);
  auto* item = r.add_items();
  item->set_impression_id(id);
  item->set_label(1.0f);
  return r;
}

std::unique_ptr<ClickdClient> Connect(ReplicatedCluster& cluster, int i) {
  auto client = ClickdClient::Create(cluster.Address(i), {.timeout = absl::Seconds(20)});
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

std::vector<uint64_t> LogImpressions(ClickdClient& client, const std::string& model, int ads,
                                     int first_ad) {
  auto predicted = client.Predict(Impressions(model, ads, first_ad));
  EXPECT_TRUE(predicted.ok()) << predicted.status();
  std::vector<uint64_t> ids;
  if (!predicted.ok()) return ids;
  for (const v1::Prediction& p : predicted->predictions()) ids.push_back(p.impression_id());
  return ids;
}

v1::FeedbackStatus OnlyStatus(const absl::StatusOr<v1::FeedbackResponse>& response) {
  EXPECT_TRUE(response.ok()) << response.status();
  if (!response.ok() || response->statuses_size() != 1) return v1::FeedbackStatus{};
  return static_cast<v1::FeedbackStatus>(response->statuses(0));
}

// Waits (bounded) until `model` on `client` has learned `updates` examples.
bool AwaitUpdates(ClickdClient& client, const std::string& model, uint64_t updates) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < give_up) {
    auto info = client.GetModel(model);
    if (info.ok() && info->updates() == updates) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

// The state digest of `model` on `client` once it has applied `version`.
std::string DigestAt(ClickdClient& client, const std::string& model, uint64_t version) {
  v1::PredictRequest predict = Impressions(model, 1, 0);
  predict.set_log_impressions(false);
  predict.set_min_model_version(version);
  auto response = client.Predict(predict);
  EXPECT_TRUE(response.ok()) << response.status();
  auto digest = client.StateDigest(model);
  EXPECT_TRUE(digest.ok()) << digest.status();
  return digest.value_or("");
}

TEST(ReplicatedFeedback, ReplicasShareOneJoinBufferThroughCrashes) {
  ReplicatedCluster cluster("feedback");
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.StartReplica(0));
  ASSERT_TRUE(cluster.StartReplica(1));
  auto r0 = Connect(cluster, 0);
  auto r1 = Connect(cluster, 1);
  ASSERT_NE(r0, nullptr);
  ASSERT_NE(r1, nullptr);
  ASSERT_TRUE(r0->CreateModel(LoopConfig("loop", 3600)).ok());
  ASSERT_TRUE(r0->CreateModel(LoopConfig("short", 2)).ok());

  // Impressions on both replicas: one sequence of ids.
  const std::vector<uint64_t> a = LogImpressions(*r0, "loop", 3, 0);
  const std::vector<uint64_t> b = LogImpressions(*r1, "loop", 2, 10);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 2u);
  std::set<uint64_t> ids(a.begin(), a.end());
  ids.insert(b.begin(), b.end());
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(b[1], b[0] + 1);

  // A label for r0's impression sent to r1 joins; its repeat to r0 does not.
  EXPECT_EQ(OnlyStatus(r1->Feedback(Click("loop", a[1]))), v1::FEEDBACK_JOINED);
  EXPECT_EQ(OnlyStatus(r0->Feedback(Click("loop", a[1]))), v1::FEEDBACK_ALREADY_LABELLED);
  // A keyed label retried on the other replica is a duplicate.
  auto keyed = r0->Feedback(Click("loop", b[0], "click-b0"));
  EXPECT_EQ(OnlyStatus(keyed), v1::FEEDBACK_JOINED);
  auto retried = r1->Feedback(Click("loop", b[0], "click-b0"));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->duplicate());
  EXPECT_EQ(retried->statuses_size(), 0);
  ASSERT_TRUE(keyed.ok());
  EXPECT_EQ(retried->model_version(), keyed->model_version());

  // With no traffic, the replicas' clocks expire "short"'s impressions at
  // their 2 s TTL: two negatives, learned once, on both.
  ASSERT_EQ(LogImpressions(*r1, "short", 2, 20).size(), 2u);
  EXPECT_TRUE(AwaitUpdates(*r0, "short", 2));
  EXPECT_TRUE(AwaitUpdates(*r1, "short", 2));

  // SIGKILL r1 after its local snapshot holds the impressions (every 2 s),
  // restart it: labels for impressions logged before the crash still join
  // there, once.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  cluster.KillReplica(1);
  EXPECT_EQ(OnlyStatus(r0->Feedback(Click("loop", a[0]))), v1::FEEDBACK_JOINED);
  ASSERT_TRUE(cluster.StartReplica(1));
  r1 = Connect(cluster, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(OnlyStatus(r1->Feedback(Click("loop", a[2]))), v1::FEEDBACK_JOINED);
  EXPECT_EQ(OnlyStatus(r1->Feedback(Click("loop", a[0]))), v1::FEEDBACK_ALREADY_LABELLED);
  auto last = r1->Feedback(Click("loop", b[1]));
  EXPECT_EQ(OnlyStatus(last), v1::FEEDBACK_JOINED);
  ASSERT_TRUE(last.ok());

  // Five clicks learned (a[0..2], b[0..1]), and the same model on both.
  EXPECT_TRUE(AwaitUpdates(*r0, "loop", 5));
  EXPECT_TRUE(AwaitUpdates(*r1, "loop", 5));
  const std::string on_r0 = DigestAt(*r0, "loop", last->model_version());
  EXPECT_FALSE(on_r0.empty());
  EXPECT_EQ(DigestAt(*r1, "loop", last->model_version()), on_r0);
  EXPECT_EQ(DigestAt(*r1, "short", last->model_version()),
            DigestAt(*r0, "short", last->model_version()));
}

}  // namespace
}  // namespace clickd
