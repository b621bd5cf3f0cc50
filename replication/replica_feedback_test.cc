// The impression-to-click loop through the replicated log (replica.h,
// core/feedback/feedback_loop.h): impressions, labels and the clock's ticks
// published by any replica are applied by every replica in stream order, so
// all hold the same join buffer and the same model; a replica's snapshot
// carries its buffer.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "replication/replica.h"
#include "replication/replica_test_fixture.h"

namespace clickd {
namespace replica_test {
namespace {

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kStart = int64_t{1'700'000'000} * kSecond;

ModelConfig LoopConfig(const std::string& name, uint64_t max_buffer_bytes = 1 << 20) {
  ModelConfig config = Config(name);
  config.feedback.ttl_seconds = 60;
  config.feedback.max_buffer_bytes = max_buffer_bytes;
  return config;
}

// `n` impressions with features (and so learning steps) from `seed`; kept
// alive while their views are used.
struct Impressions {
  std::vector<std::vector<HashedFeature>> features;
  std::vector<ImpressionExample> views;
};

Impressions MakeImpressions(uint64_t seed, int n, int features = 3) {
  Impressions out;
  out.features.resize(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < features; ++k) {
      const uint64_t key = (seed * 131 + static_cast<uint64_t>(i)) * 64 + static_cast<uint64_t>(k);
      out.features[i].push_back({key, 1.0f});
    }
  }
  for (int i = 0; i < n; ++i) {
    out.views.push_back({out.features[i], {}, 0.1f * static_cast<float>(i)});
  }
  return out;
}

std::string BufferOf(Node& node, const std::string& model) {
  std::shared_ptr<ServedModel> served = node.registry->Get(model);
  return served == nullptr || served->feedback() == nullptr ? ""
                                                            : served->feedback()->EncodeState();
}

class ReplicaFeedbackTest : public ReplicaTest {
 protected:
  // Creates `config` through `via` and waits until every node has it.
  static void CreateLoopEverywhere(Node& via, const std::vector<Node*>& all,
                                   const ModelConfig& config) {
    auto created = via.replica->Create(config);
    ASSERT_TRUE(created.ok()) << created.status();
    const uint64_t sequence = via.replica->model_version(config.name);
    for (Node* node : all) ASSERT_TRUE(node->replica->AwaitApplied(sequence, kWait).ok());
  }

  // Starts replicas "a" (local snapshots in `a_dir`, if any) and "b", and
  // creates `config` through a; false if a step failed (and said why).
  bool StartPair(const ModelConfig& config, Node** a, Node** b, const std::string& a_dir = "") {
    *a = StartNode("a", a_dir);
    *b = StartNode("b");
    if (*a == nullptr || *b == nullptr) return false;
    CreateLoopEverywhere(**a, {*a, *b}, config);
    return !HasFatalFailure();
  }
};

TEST_F(ReplicaFeedbackTest, ImpressionsAndLabelsFromAnyReplicaEndEqualEverywhere) {
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("loop"), &a, &b));

  // Ids come from the stream's order, whichever replica published.
  const Impressions first = MakeImpressions(1, 3), second = MakeImpressions(2, 2);
  auto on_a = a->replica->LogImpressions("loop", kStart, first.views);
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  auto on_b = b->replica->LogImpressions("loop", kStart + kSecond, second.views);
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  EXPECT_EQ(on_a->applied.impressions, 3u);
  EXPECT_EQ(on_b->applied.first_id, on_a->applied.first_id + 3);
  EXPECT_GT(on_b->sequence, on_a->sequence);

  // A label for a's impression, sent to b; its repeat to a; an id never
  // issued.
  const uint64_t id = on_a->applied.first_id + 1;
  const FeedbackItem click[] = {{id, 1.0f, 1.0f, kStart + 5 * kSecond}};
  auto joined = b->replica->Feedback("loop", kStart + 5 * kSecond, click, "");
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->applied.outcomes, std::vector<JoinOutcome>{JoinOutcome::kJoined});
  auto again = a->replica->Feedback("loop", kStart + 6 * kSecond, click, "");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->applied.outcomes, std::vector<JoinOutcome>{JoinOutcome::kAlreadyLabelled});
  const FeedbackItem unknown[] = {{on_b->applied.first_id + 100, 1.0f, 1.0f, 0}};
  auto never = a->replica->Feedback("loop", kStart + 6 * kSecond, unknown, "");
  ASSERT_TRUE(never.ok()) << never.status();
  EXPECT_EQ(never->applied.outcomes, std::vector<JoinOutcome>{JoinOutcome::kUnknown});

  for (Node* node : {a, b}) CatchUp(*node);
  EXPECT_EQ(UpdatesOf(*a, "loop"), 1u);  // wait_negative: the click only, so far
  EXPECT_TRUE(StateOf(*a, "loop") == StateOf(*b, "loop"));
  EXPECT_FALSE(BufferOf(*a, "loop").empty());
  EXPECT_TRUE(BufferOf(*a, "loop") == BufferOf(*b, "loop"));
  // Both count what they applied, whoever published it.
  for (Node* node : {a, b}) {
    const FeedbackCounters c = node->registry->Get("loop")->feedback_counters();
    EXPECT_EQ(c.impressions, 5u);
    EXPECT_EQ(c.joined, 1u);
    EXPECT_EQ(c.already_labelled, 1u);
    EXPECT_EQ(c.unknown, 1u);
  }
}

// A Kafka feedback topic's labels (Replica::FeedbackAt): joined once at the
// position they were read from, whichever replica publishes them; every
// replica holds the feedback partition's position.
TEST_F(ReplicaFeedbackTest, LabelsFromAFeedbackTopicAreJoinedOnlyAtTheirPosition) {
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("loop"), &a, &b));
  const Impressions shown = MakeImpressions(4, 3);
  auto logged = a->replica->LogImpressions("loop", kStart, shown.views);
  ASSERT_TRUE(logged.ok()) << logged.status();
  const uint64_t id = logged->applied.first_id;
  const FeedbackItem first[] = {{id, 1.0f, 1.0f, kStart}, {id + 1, 0.0f, 1.0f, kStart}};
  auto joined =
      a->replica->FeedbackAt("loop", kStart + kSecond, first, {"labels", 0, -1, 2, "a.1"});
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->applied.outcomes,
            (std::vector<JoinOutcome>{JoinOutcome::kJoined, JoinOutcome::kJoined}));
  // The same records read by b from the same (stale) position: nothing.
  auto stale = b->replica->FeedbackAt("loop", kStart + kSecond, first, {"labels", 0, -1, 2, "b.1"});
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAlreadyExists) << stale.status();
  const FeedbackItem next[] = {{id + 2, 1.0f, 1.0f, kStart}};
  auto later = b->replica->FeedbackAt("loop", kStart + kSecond, next, {"labels", 0, 2, 3, "b.2"});
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(later->applied.outcomes, std::vector<JoinOutcome>{JoinOutcome::kJoined});
  for (Node* node : {a, b}) {
    CatchUp(*node);
    EXPECT_EQ(node->registry->Get("loop")->idempotency().Position("labels", 0), 3);
    const FeedbackCounters c = node->registry->Get("loop")->feedback_counters();
    EXPECT_EQ(c.joined, 3u);
    EXPECT_EQ(c.already_labelled, 0u);
  }
  EXPECT_TRUE(BufferOf(*a, "loop") == BufferOf(*b, "loop"));
  EXPECT_TRUE(StateOf(*a, "loop") == StateOf(*b, "loop"));
}

TEST_F(ReplicaFeedbackTest, AKeyedLabelIsJoinedOnceWhicheverReplicaGetsTheRetry) {
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("loop"), &a, &b));
  const Impressions shown = MakeImpressions(3, 1);
  auto logged = a->replica->LogImpressions("loop", kStart, shown.views);
  ASSERT_TRUE(logged.ok()) << logged.status();
  const FeedbackItem click[] = {{logged->applied.first_id, 1.0f, 1.0f, kStart}};
  auto first = a->replica->Feedback("loop", kStart, click, "click-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->deduplicated);
  auto retry = b->replica->Feedback("loop", kStart + kSecond, click, "click-1");
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->deduplicated);
  EXPECT_TRUE(retry->applied.outcomes.empty());
  EXPECT_EQ(retry->sequence, first->sequence);
  for (Node* node : {a, b}) {
    CatchUp(*node);
    EXPECT_EQ(node->registry->Get("loop")->feedback_counters().joined, 1u);
  }
}

TEST_F(ReplicaFeedbackTest, AFullBufferRefusesTheSameRecordOnEveryReplica) {
  // The smallest budget: room for two impressions of 20 features, not four.
  const uint64_t budget = 1024;
  ASSERT_LT(2 * JoinBuffer::ImpressionBytes(20, 0), budget);
  ASSERT_GT(4 * JoinBuffer::ImpressionBytes(20, 0), budget);
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("small", budget), &a, &b));
  const Impressions first = MakeImpressions(4, 2, 20), two = MakeImpressions(5, 2, 20);
  ASSERT_TRUE(a->replica->LogImpressions("small", kStart, first.views).ok());
  const std::string before = BufferOf(*a, "small");

  // Published without a local check: the record's apply refuses it, on
  // every replica, all of it.
  auto refused = b->replica->LogImpressions("small", kStart + kSecond, two.views);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("feedback.max_buffer_bytes"), std::string::npos)
      << refused.status();
  for (Node* node : {a, b}) {
    CatchUp(*node);
    EXPECT_TRUE(BufferOf(*node, "small") == before);
    EXPECT_EQ(node->registry->Get("small")->feedback()->buffer().Stats().pending, 2u);
    EXPECT_EQ(node->replica->status().rejected_records, 0u);  // refused, not damaged
  }
  // What fits still goes in, with the next ids.
  const Impressions one = MakeImpressions(6, 1, 1);
  auto fits = b->replica->LogImpressions("small", kStart + kSecond, one.views);
  ASSERT_TRUE(fits.ok()) << fits.status();
  CatchUp(*a);
  EXPECT_TRUE(BufferOf(*a, "small") == BufferOf(*b, "small"));
  EXPECT_TRUE(StateOf(*a, "small") == StateOf(*b, "small"));
}

TEST_F(ReplicaFeedbackTest, TicksFromEveryReplicaExpireAnImpressionOnce) {
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("loop"), &a, &b));
  const Impressions shown = MakeImpressions(7, 2);
  ASSERT_TRUE(a->replica->LogImpressions("loop", kStart, shown.views).ok());
  CatchUp(*b);
  const std::optional<int64_t> due = b->registry->Get("loop")->feedback()->buffer().NextExpiryUs();
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(*due, kStart + 60 * kSecond);

  // Both replicas' clocks pass the expiry and each publishes a tick for it:
  // the stream keeps one.
  ASSERT_TRUE(a->replica->Tick("loop", *due + kSecond, *due).ok());
  const uint64_t after_first = a->replica->applied_sequence();
  ASSERT_TRUE(b->replica->Tick("loop", *due + 2 * kSecond, *due).ok());
  for (Node* node : {a, b}) {
    CatchUp(*node);
    EXPECT_EQ(node->replica->applied_sequence(), after_first);
    const FeedbackCounters c = node->registry->Get("loop")->feedback_counters();
    EXPECT_EQ(c.expired, 2u);
    EXPECT_EQ(UpdatesOf(*node, "loop"), 2u);  // wait_negative: two negatives
    EXPECT_FALSE(node->registry->Get("loop")->feedback()->buffer().NextExpiryUs().has_value());
  }
  EXPECT_TRUE(StateOf(*a, "loop") == StateOf(*b, "loop"));
}

TEST_F(ReplicaFeedbackTest, ALocalSnapshotCarriesTheJoinBuffer) {
  const std::string dir = server_.dir() + "/a";
  Node *a, *b;
  ASSERT_TRUE(StartPair(LoopConfig("loop"), &a, &b, dir));
  const Impressions shown = MakeImpressions(8, 4);
  auto logged = b->replica->LogImpressions("loop", kStart, shown.views);
  ASSERT_TRUE(logged.ok()) << logged.status();
  CatchUp(*a);
  auto snapshot = a->replica->Snapshot(/*publish=*/false);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->sequence, logged->sequence);

  // A restart resumes the stream after the snapshot: the impressions come
  // back from the snapshot alone, and a label for one of them joins.
  a->replica.reset();
  Node* restarted = StartNode("a-again", dir);
  ASSERT_NE(restarted, nullptr);
  EXPECT_NE(restarted->report.source.find("local snapshot"), std::string::npos)
      << restarted->report.source;
  EXPECT_TRUE(BufferOf(*restarted, "loop") == BufferOf(*b, "loop"));
  const FeedbackItem click[] = {{logged->applied.first_id + 3, 1.0f, 1.0f, kStart}};
  auto joined = restarted->replica->Feedback("loop", kStart + kSecond, click, "");
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(joined->applied.outcomes, std::vector<JoinOutcome>{JoinOutcome::kJoined});
  CatchUp(*b);
  EXPECT_TRUE(StateOf(*restarted, "loop") == StateOf(*b, "loop"));
  EXPECT_TRUE(BufferOf(*restarted, "loop") == BufferOf(*b, "loop"));
}

}  // namespace
}  // namespace replica_test
}  // namespace clickd

namespace clickd {
namespace replica_test {
namespace {

// The online calibration is fed by what the applier learns, so it is the
// same on every replica; a restored replica gets it from the snapshot and
// goes on feeding it the records after it.
TEST_F(ReplicaFeedbackTest, ASnapshotCarriesTheCalibrationFit) {
  const std::string dir = server_.dir() + "/a";
  ModelConfig config = LoopConfig("calibrated");
  config.calibration.enabled = true;
  Node *a, *b;
  ASSERT_TRUE(StartPair(config, &a, &b, dir));
  auto fit_of = [](Node& node) { return node.registry->Get("calibrated")->calibration(); };
  // The first fit comes after 10,000 examples (OnlineCalibrationOptions).
  for (int i = 0; i < 21; ++i) {
    const Batch batch = MakeBatch(100 + i, 500);
    ASSERT_TRUE(a->replica->Learn("calibrated", batch.training, "").ok());
  }
  CatchUp(*a);
  CatchUp(*b);
  ASSERT_TRUE(fit_of(*a).fitted);
  auto snapshot = a->replica->Snapshot(/*publish=*/false);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  const Batch after = MakeBatch(999, 64);
  ASSERT_TRUE(b->replica->Learn("calibrated", after.training, "").ok());

  a->replica.reset();
  Node* restarted = StartNode("a-again", dir);
  ASSERT_NE(restarted, nullptr);
  CatchUp(*restarted);
  CatchUp(*b);
  const std::string expected = b->registry->Get("calibrated")->EncodeCalibration();
  EXPECT_FALSE(expected.empty());
  EXPECT_TRUE(restarted->registry->Get("calibrated")->EncodeCalibration() == expected);
  EXPECT_EQ(fit_of(*restarted).examples, fit_of(*b).examples);
  EXPECT_EQ(fit_of(*restarted).gamma, fit_of(*b).gamma);
}

}  // namespace
}  // namespace replica_test
}  // namespace clickd
