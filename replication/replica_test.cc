// Replica (replica.h) against a real single-node nats-server with JetStream
// (R=1 streams; started by the test on a free 127.0.0.1 port, stopped by its
// PID): replicas in one process, each with its own memory-only registry and
// its own NATS connection, applying one stream. They must end with equal
// models whatever order their writers raced in.
#include "replication/replica.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/persist/batch_codec.h"
#include "gtest/gtest.h"
#include "replication/log_record.h"
#include "replication/replica_test_fixture.h"

namespace clickd {
namespace replica_test {
namespace {

TEST_F(ReplicaTest, ConcurrentLearnersOnTwoReplicasEndEqual) {
  Node* a = StartNode("a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->report.source, "empty");
  CreateEverywhere(*a, {a, b}, "ctr");

  constexpr int kThreads = 4, kBatchesPerThread = 15, kBatchSize = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    Replica* replica = (t % 2 == 0 ? a : b)->replica.get();
    threads.emplace_back([replica, t, &failures] {
      for (int i = 0; i < kBatchesPerThread; ++i) {
        const Batch batch = MakeBatch(t * 1000 + i, kBatchSize);
        auto learned = replica->Learn("ctr", batch.training, "");
        if (!learned.ok() || learned->scored.size() != size_t{kBatchSize} ||
            learned->deduplicated) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);

  CatchUp(*a);
  CatchUp(*b);
  EXPECT_EQ(a->replica->applied_sequence(), b->replica->applied_sequence());
  // One create and every batch, each once.
  EXPECT_EQ(a->replica->applied_sequence(), 1u + kThreads * kBatchesPerThread);
  EXPECT_EQ(UpdatesOf(*a, "ctr"), uint64_t{kThreads * kBatchesPerThread * kBatchSize});
  EXPECT_EQ(UpdatesOf(*b, "ctr"), UpdatesOf(*a, "ctr"));
  EXPECT_FALSE(StateOf(*a, "ctr").empty());
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
  EXPECT_EQ(a->replica->model_version("ctr"), b->replica->model_version("ctr"));
}

TEST_F(ReplicaTest, TheSameIdempotencyKeyLearnsOnce) {
  Node* a = StartNode("a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  const Batch batch = MakeBatch(1, 5);

  auto first = a->replica->Learn("ctr", batch.training, "key-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->scored.size(), 5u);
  EXPECT_FALSE(first->deduplicated);
  auto again = a->replica->Learn("ctr", batch.training, "key-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->sequence, first->sequence);
  EXPECT_TRUE(again->scored.empty());
  EXPECT_TRUE(again->deduplicated);
  // The retry may go to another replica.
  auto elsewhere = b->replica->Learn("ctr", batch.training, "key-1");
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->sequence, first->sequence);
  EXPECT_TRUE(elsewhere->deduplicated);

  CatchUp(*a);
  CatchUp(*b);
  EXPECT_EQ(a->replica->applied_sequence(), first->sequence);
  EXPECT_EQ(UpdatesOf(*a, "ctr"), 5u);
  EXPECT_EQ(UpdatesOf(*b, "ctr"), 5u);
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
}

// A Kafka source's batches (Replica::LearnAt): learned once at the position
// they were read from, whoever publishes them; the positions are on every
// replica and in snapshots.
TEST_F(ReplicaTest, ASourceBatchIsLearnedOnlyAtThePositionItWasReadFrom) {
  const std::string dir = ::testing::TempDir() + "/replica_source_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  Node* a = StartNode("a", dir);
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  const Batch first = MakeBatch(1, 5), other = MakeBatch(2, 7), second = MakeBatch(3, 4);
  auto learned = a->replica->LearnAt("ctr", first.training, {"clicks", 0, -1, 10, "a.1"});
  ASSERT_TRUE(learned.ok()) << learned.status();
  EXPECT_EQ(learned->scored.size(), 5u);
  // Another replica read the partition from the same (stale) position: its
  // batch, whatever its length, learns nothing.
  auto again = b->replica->LearnAt("ctr", other.training, {"clicks", 0, -1, 12, "b.1"});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  // A batch read from anywhere but the partition's position learns nothing
  // either, after JetStream's duplicate window too (another message id).
  auto elsewhere = b->replica->LearnAt("ctr", other.training, {"clicks", 0, 3, 12, "b.2"});
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kAlreadyExists) << elsewhere.status();
  auto next = b->replica->LearnAt("ctr", second.training, {"clicks", 0, 10, 20, "b.3"});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->scored.size(), 4u);
  EXPECT_FALSE(next->deduplicated);
  // A retry of the same attempt is dropped by JetStream.
  auto retry = b->replica->LearnAt("ctr", second.training, {"clicks", 0, 10, 20, "b.3"});
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->deduplicated);
  EXPECT_EQ(retry->sequence, next->sequence);
  // Another partition has its own position.
  auto partition1 = a->replica->LearnAt("ctr", second.training, {"clicks", 1, -1, 3, "a.2"});
  ASSERT_TRUE(partition1.ok()) << partition1.status();
  CatchUp(*a);
  CatchUp(*b);
  for (Node* node : {a, b}) {
    EXPECT_EQ(UpdatesOf(*node, "ctr"), 13u);
    EXPECT_EQ(node->registry->Get("ctr")->idempotency().Position("clicks", 0), 20);
    EXPECT_EQ(node->registry->Get("ctr")->idempotency().Position("clicks", 1), 3);
  }
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
  // A replica restored from a snapshot has the positions.
  ASSERT_TRUE(a->replica->Snapshot(/*publish=*/false).ok());
  Node* c = StartNode("c", dir);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->report.source.find("local snapshot"), std::string::npos) << c->report.source;
  EXPECT_EQ(c->registry->Get("ctr")->idempotency().Position("clicks", 0), 20);
  EXPECT_EQ(c->registry->Get("ctr")->idempotency().Position("clicks", 1), 3);
  // GetModel's figures are the restored state's.
  EXPECT_EQ(c->registry->Get("ctr")->CachedStats().updates, 13u);
  auto stale = c->replica->LearnAt("ctr", other.training, {"clicks", 0, 10, 25, "c.1"});
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAlreadyExists) << stale.status();
  auto wrong = c->replica->LearnAt("ctr", other.training, {"clicks", 0, 15, 25, "c.2"});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kAlreadyExists) << wrong.status();
  CatchUp(*c);
  EXPECT_EQ(UpdatesOf(*c, "ctr"), 13u);
  std::filesystem::remove_all(dir);
}

TEST_F(ReplicaTest, AnUpdateForADeletedModelIsNotLearnedByItsSuccessor) {
  Node* a = StartNode("a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const uint64_t old_created = CreateEverywhere(*a, {a, b}, "ctr");
  const absl::Status deleted = b->replica->Delete("ctr");
  ASSERT_TRUE(deleted.ok()) << deleted;
  const uint64_t new_created = CreateEverywhere(*b, {a, b}, "ctr");
  ASSERT_GT(new_created, old_created);

  // A batch accepted for the old model, arriving after the re-create.
  const Batch batch = MakeBatch(2, 6);
  std::string record;
  EncodeLogRecordHeader(LogRecord::Kind::kUpdate, "ctr", old_created, &record);
  std::string payload;
  EncodeBatch(batch.training, &payload);
  record += payload;
  SealLogRecord(&record);
  auto stale = a->log->Publish(record, "stale-update", milliseconds(5000));
  ASSERT_TRUE(stale.ok()) << stale.status();
  for (Node* node : {a, b}) {
    ASSERT_TRUE(node->replica->AwaitApplied(stale->sequence, kWait).ok());
    EXPECT_EQ(UpdatesOf(*node, "ctr"), 0u);
    EXPECT_EQ(node->replica->model_version("ctr"), new_created);
    EXPECT_EQ(node->replica->status().rejected_records, 0u);  // not damaged, just stale
  }

  // The new model learns what is sent to it.
  auto learned = a->replica->Learn("ctr", batch.training, "");
  ASSERT_TRUE(learned.ok()) << learned.status();
  EXPECT_EQ(learned->scored.size(), 6u);
  CatchUp(*b);
  EXPECT_EQ(UpdatesOf(*a, "ctr"), 6u);
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
}

TEST_F(ReplicaTest, ANewReplicaStartsFromThePublishedSnapshot) {
  Node* a = StartNode("a", server_.dir() + "/a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "m1");
  CreateEverywhere(*b, {a, b}, "m2");
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 4; ++i) {
      const Batch batch = MakeBatch(round * 10 + i, 4);
      ASSERT_TRUE(a->replica->Learn("m1", batch.training, "").ok());
      ASSERT_TRUE(b->replica->Learn("m2", batch.training, "").ok());
    }
    CatchUp(*a);
    auto snapshot = a->replica->Snapshot(/*publish=*/true);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_TRUE(snapshot->published);
    EXPECT_EQ(snapshot->sequence, a->replica->applied_sequence());
  }
  // Two published snapshots: the log was purged below the older one.
  auto state = a->log->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_GT(state->first_sequence, 1u);
  // Records after the newest snapshot, which the new replica reads from the
  // stream.
  const Batch more = MakeBatch(99, 4);
  ASSERT_TRUE(b->replica->Learn("m1", more.training, "").ok());

  const std::string empty_dir = server_.dir() + "/c";
  std::filesystem::create_directories(empty_dir);
  Node* c = StartNode("c", empty_dir);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->report.source, "published snapshot");
  for (Node* node : {a, b, c}) CatchUp(*node);
  EXPECT_EQ(c->replica->applied_sequence(), a->replica->applied_sequence());
  EXPECT_EQ(c->registry->size(), 2u);
  for (const std::string model : {"m1", "m2"}) {
    EXPECT_FALSE(StateOf(*a, model).empty());
    EXPECT_TRUE(StateOf(*c, model) == StateOf(*a, model)) << model;
    EXPECT_TRUE(StateOf(*b, model) == StateOf(*a, model)) << model;
    EXPECT_EQ(c->replica->model_version(model), a->replica->model_version(model)) << model;
  }
}

// The compact encoding's rounding bits come from the key and the round, so
// replicas applying one stream hold the same codes, and a replica started
// from a published snapshot (canonical keys) holds them too.
TEST_F(ReplicaTest, CompactModelsLearnAlikeOnEveryReplica) {
  Node* a = StartNode("a", server_.dir() + "/a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ModelConfig config = Config("compact");
  config.memory.encoding = StateEncoding::kCompact;
  CreateEverywhere(*a, {a, b}, config);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    Replica* replica = (t == 0 ? a : b)->replica.get();
    threads.emplace_back([replica, t] {
      for (int i = 0; i < 10; ++i) {
        const Batch batch = MakeBatch(t * 1000 + i, 8);
        EXPECT_TRUE(replica->Learn("compact", batch.training, "").ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Two published snapshots, so that the log is purged below the older one
  // and a new replica must start from a snapshot.
  for (int round = 0; round < 2; ++round) {
    const Batch batch = MakeBatch(50 + round, 8);
    ASSERT_TRUE(a->replica->Learn("compact", batch.training, "").ok());
    CatchUp(*a);
    auto snapshot = a->replica->Snapshot(/*publish=*/true);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  }
  const Batch more = MakeBatch(77, 8);
  ASSERT_TRUE(b->replica->Learn("compact", more.training, "").ok());
  const std::string empty_dir = server_.dir() + "/c";
  std::filesystem::create_directories(empty_dir);
  Node* c = StartNode("c", empty_dir);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->report.source, "published snapshot");
  for (Node* node : {a, b, c}) CatchUp(*node);
  EXPECT_EQ(UpdatesOf(*a, "compact"), 23u * 8);
  EXPECT_FALSE(StateOf(*a, "compact").empty());
  EXPECT_TRUE(StateOf(*b, "compact") == StateOf(*a, "compact"));
  EXPECT_TRUE(StateOf(*c, "compact") == StateOf(*a, "compact"));
  EXPECT_EQ(c->registry->Get("compact")->model().config().memory.encoding, StateEncoding::kCompact);
}

TEST_F(ReplicaTest, ADamagedRecordIsSkippedByEveryReplicaAlike) {
  Node* a = StartNode("a");
  Node* b = StartNode("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  const Batch before = MakeBatch(3, 4);
  ASSERT_TRUE(a->replica->Learn("ctr", before.training, "").ok());

  // Garbage on the log's subject, as any NATS client could publish it.
  jsPubAck* ack = nullptr;
  jsErrCode code;
  const std::string garbage = "\x01\x02not a log record at all";
  ASSERT_EQ(js_Publish(&ack, a->nats->jetstream(), "clickd.repltest.log", garbage.data(),
                       static_cast<int>(garbage.size()), nullptr, &code),
            NATS_OK);
  const uint64_t damaged = ack->Sequence;
  jsPubAck_Destroy(ack);

  const Batch after = MakeBatch(4, 4);
  auto learned = b->replica->Learn("ctr", after.training, "");
  ASSERT_TRUE(learned.ok()) << learned.status();
  EXPECT_GT(learned->sequence, damaged);
  for (Node* node : {a, b}) {
    CatchUp(*node);
    const ReplicaStatus status = node->replica->status();
    EXPECT_EQ(status.rejected_records, 1u);
    EXPECT_TRUE(status.broken.ok()) << status.broken;
    EXPECT_EQ(status.applied_sequence, learned->sequence);
    EXPECT_EQ(UpdatesOf(*node, "ctr"), 8u);
  }
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
}

TEST_F(ReplicaTest, AwaitAppliedPastTheEndNamesBothSequences) {
  Node* a = StartNode("a");
  ASSERT_NE(a, nullptr);
  CreateEverywhere(*a, {a}, "ctr");
  const uint64_t applied = a->replica->applied_sequence();
  ASSERT_EQ(applied, 1u);
  const absl::Status s = a->replica->AwaitApplied(applied + 100, milliseconds(300));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find(absl::StrCat("model_version ", applied)), std::string::npos) << s;
  EXPECT_NE(s.message().find(absl::StrCat("min_model_version ", applied + 100)), std::string::npos)
      << s;
  EXPECT_TRUE(a->replica->AwaitApplied(applied, milliseconds(300)).ok());
}

}  // namespace
}  // namespace replica_test
}  // namespace clickd
