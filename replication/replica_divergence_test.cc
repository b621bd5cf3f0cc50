// Divergence detection (divergence.h), the log's retention and restoring
// through a NATS outage, with replicas
// applying one stream of a real nats-server (replica_test_fixture.h). One
// replica's reader is given another copy of the log than its peers' (as a
// NATS node whose store diverged would serve it), and the replicas must
// notice instead of learning it silently.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "replication/applied_ids.h"
#include "replication/replica.h"
#include "replication/replica_test_fixture.h"

namespace clickd {
namespace replica_test {
namespace {

using Rewrite = std::function<std::vector<OwnedLogRecord>(OwnedLogRecord)>;

// Waits (bounded) until `done` holds.
template <typename Done>
bool Eventually(Done done) {
  const auto give_up = std::chrono::steady_clock::now() + kWait;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::function<void(ReplicaOptions*)> WithRewrite(Rewrite rewrite) {
  return [rewrite](ReplicaOptions* options) { options->rewrite_for_testing = rewrite; };
}

// Learns `count` batches of 4 through `via`.
void LearnBatches(Node& via, int first_seed, int count) {
  for (int i = 0; i < count; ++i) {
    const Batch batch = MakeBatch(first_seed + i, 4);
    auto learned = via.replica->Learn("ctr", batch.training, "");
    ASSERT_TRUE(learned.ok()) << learned.status();
  }
}

TEST_F(ReplicaTest, AReplicaReadingAnotherCopyOfARecordIsCaughtByItsPeers) {
  Node* a = StartNode("a");
  Node* b = StartNode("b");
  // c's copy of record 4 differs by one byte of its batch.
  Node* c = StartNode("c", "", WithRewrite([](OwnedLogRecord r) {
                        if (r.sequence == 4) r.data[r.data.size() / 2] ^= 1;
                        return std::vector<OwnedLogRecord>{std::move(r)};
                      }));
  ASSERT_NE(c, nullptr);
  CreateEverywhere(*a, {a, b, c}, "ctr");
  LearnBatches(*a, 0, 8);
  ASSERT_TRUE(Eventually([&] {
    return c->replica->status().divergence.diverged &&
           a->replica->status().divergence.peers_disagreeing == 1 &&
           b->replica->status().divergence.peers_disagreeing == 1;
  }));
  const ReplicaStatus odd = c->replica->status();
  EXPECT_EQ(odd.divergence.peers_disagreeing, 2);
  EXPECT_NE(odd.divergence.reason.find("log chain at sequence"), std::string::npos)
      << odd.divergence.reason;
  for (Node* good : {a, b}) {
    const ReplicaStatus s = good->replica->status();
    EXPECT_FALSE(s.divergence.diverged) << s.divergence.reason;
    ASSERT_EQ(s.divergence.disagreeing.size(), 1u);
    EXPECT_EQ(s.divergence.disagreeing[0].rfind("c (", 0), 0u) << s.divergence.disagreeing[0];
  }
  // The odd one refuses writes and says why; it still holds its models for
  // reads. The others go on learning.
  const Batch batch = MakeBatch(99, 4);
  auto refused = c->replica->Learn("ctr", batch.training, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("diverged"), std::string::npos) << refused.status();
  EXPECT_NE(c->registry->Get("ctr"), nullptr);
  EXPECT_TRUE(a->replica->Learn("ctr", batch.training, "").ok());
  EXPECT_FALSE(StateOf(*a, "ctr") == StateOf(*c, "ctr"));
  // A diverged replica publishes no snapshot for others to bootstrap from.
  auto snapshot = c->replica->Snapshot(/*publish=*/true);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_FALSE(snapshot->published);
}

TEST_F(ReplicaTest, AnAcknowledgementAtAnotherSequenceThanDeliveredIsRefused) {
  Node* a = StartNode("a");
  // b's copy has one record more at sequence 3: everything after it is
  // shifted by one, as one NATS node's store was in the fault runs.
  Node* b = StartNode("b", "", WithRewrite([](OwnedLogRecord r) {
                        std::vector<OwnedLogRecord> out;
                        if (r.sequence == 3) {
                          OwnedLogRecord extra = r;
                          extra.msg_id = "someone-else";
                          out.push_back(std::move(extra));
                        }
                        if (r.sequence >= 3) ++r.sequence;
                        out.push_back(std::move(r));
                        return out;
                      }));
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  LearnBatches(*a, 0, 2);  // sequences 2 and 3
  const Batch batch = MakeBatch(7, 4);
  auto refused = b->replica->Learn("ctr", batch.training, "key-7");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("acknowledged the record at sequence 4"),
            std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("delivered it at sequence 5"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(b->replica->status().divergence.diverged);
  // The retry on a healthy replica with the same key learns nothing twice.
  auto retried = a->replica->Learn("ctr", batch.training, "key-7");
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->deduplicated);
  EXPECT_EQ(retried->sequence, 4u);
}

TEST_F(ReplicaTest, AReplicaPurgedPastWhileReadingStopsAndSaysSo) {
  auto drop = std::make_shared<std::atomic<bool>>(false);
  Node* a = StartNode("a");
  Node* b = StartNode("b", "", [drop](ReplicaOptions* options) {
    options->rewrite_for_testing = [drop](OwnedLogRecord r) {
      if (drop->load()) return std::vector<OwnedLogRecord>{};
      return std::vector<OwnedLogRecord>{std::move(r)};
    };
    // Its checkpoints would hold the purge back: it must fall behind it.
    options->checkpoint_subject = "";
  });
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  drop->store(true);
  LearnBatches(*a, 0, 5);
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  LearnBatches(*a, 10, 5);
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  auto state = a->log->State();
  ASSERT_TRUE(state.ok());
  ASSERT_GT(state->first_sequence, 2u);
  drop->store(false);
  LearnBatches(*a, 20, 1);  // b sees a gap, and the stream no longer has it
  ASSERT_TRUE(Eventually([&] { return !b->replica->status().broken.ok(); }));
  const ReplicaStatus s = b->replica->status();
  EXPECT_NE(s.broken.message().find("was purged up to sequence"), std::string::npos) << s.broken;
  EXPECT_EQ(s.applied_sequence, 1u);
  EXPECT_GT(s.stream_sequence, s.applied_sequence);  // the lag shows
  const Batch batch = MakeBatch(5, 4);
  EXPECT_TRUE(absl::IsUnavailable(b->replica->Learn("ctr", batch.training, "").status()));
}

TEST_F(ReplicaTest, RetentionKeepsWhatALiveReplicaHasNotAppliedAndAMarginOfRecords) {
  auto drop = std::make_shared<std::atomic<bool>>(false);
  Node* a = StartNode("a", "", [](ReplicaOptions* options) { options->retain_records = 4; });
  Node* b = StartNode("b", "", WithRewrite([drop](OwnedLogRecord r) {
                        if (drop->load()) return std::vector<OwnedLogRecord>{};
                        return std::vector<OwnedLogRecord>{std::move(r)};
                      }));
  ASSERT_NE(b, nullptr);
  CreateEverywhere(*a, {a, b}, "ctr");
  LearnBatches(*a, 0, 9);  // sequences 2..10
  CatchUp(*b);
  // Two snapshots moments apart: the log keeps 4 records below the newer.
  ASSERT_TRUE(a->replica->Snapshot(true).ok());  // at 10
  LearnBatches(*a, 50, 1);
  ASSERT_TRUE(Eventually([&] { return b->replica->status().divergence.min_live_applied >= 11; }));
  ASSERT_TRUE(Eventually([&] { return a->replica->status().divergence.min_live_applied >= 11; }));
  ASSERT_TRUE(a->replica->Snapshot(true).ok());  // at 11
  auto state = a->log->State();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->first_sequence, 8u);  // 11 + 1 - 4

  // b stops applying (its checkpoints go on): the log keeps what it lacks.
  drop->store(true);
  LearnBatches(*a, 60, 20);
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  state = a->log->State();
  ASSERT_TRUE(state.ok());
  EXPECT_LE(state->first_sequence, 12u);
  drop->store(false);
  LearnBatches(*a, 90, 1);
  CatchUp(*b);
  EXPECT_TRUE(b->replica->status().broken.ok()) << b->replica->status().broken;
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
}

TEST_F(ReplicaTest, ARecordTheStreamStoredTwiceIsLearnedOnceByEveryReplica) {
  // Both replicas read a log in which record 3 was stored again at 4 (as a
  // server that forgot its duplicate window stores a retry).
  Rewrite twice = [](OwnedLogRecord r) {
    std::vector<OwnedLogRecord> out;
    if (r.sequence >= 4) ++r.sequence;
    out.push_back(r);
    if (r.sequence == 3) {
      ++r.sequence;
      out.push_back(std::move(r));
    }
    return out;
  };
  auto no_checks = [&](ReplicaOptions* options) {
    options->rewrite_for_testing = twice;
    options->checkpoint_subject = "";  // their log is shifted from the stream's: no PubAck check
  };
  Node* a = StartNode("a", "", no_checks);
  Node* b = StartNode("b", "", no_checks);
  ASSERT_NE(b, nullptr);
  auto created = a->replica->Create(Config("ctr"));
  ASSERT_TRUE(created.ok()) << created.status();
  for (int i = 0; i < 3; ++i) {  // sequences 2..4 in the stream, 2..5 as read
    const Batch batch = MakeBatch(i, 4);
    auto learned = a->replica->Learn("ctr", batch.training, absl::StrCat("k", i));
    // The record after the doubled one is delivered one later than it was
    // acknowledged: refused, as for any shifted copy (and a latches).
    if (i < 2) EXPECT_TRUE(learned.ok()) << learned.status();
  }
  ASSERT_TRUE(b->replica->AwaitApplied(5, kWait).ok());
  ASSERT_TRUE(a->replica->AwaitApplied(5, kWait).ok());
  EXPECT_EQ(UpdatesOf(*a, "ctr"), 12u);  // 3 batches of 4, none twice
  EXPECT_EQ(UpdatesOf(*b, "ctr"), 12u);
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
  EXPECT_EQ(a->replica->status().duplicate_records, 1u);
  EXPECT_EQ(b->replica->status().duplicate_records, 1u);
}

TEST(AppliedIds, RemembersIdsWithinTheWindowOfTheRecordsOwnTimesAndRoundTrips) {
  AppliedIds ids(std::chrono::seconds(120));
  const int64_t t0 = int64_t{1'700'000'000} * 1'000'000'000;
  ids.Add("u-m-k1", 5, t0);
  ids.Add("u-m-k2", 6, t0 + 1'000'000'000);
  EXPECT_EQ(ids.Seen("u-m-k1", t0 + 60'000'000'000), std::optional<uint64_t>(5));
  auto copy = AppliedIds::Decode(ids.Encode(), std::chrono::seconds(120));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->Seen("u-m-k2", t0 + 60'000'000'000), std::optional<uint64_t>(6));
  // Past the window (measured on the stored times) an id is forgotten.
  EXPECT_FALSE(ids.Seen("u-m-k1", t0 + 121'000'000'000).has_value());
  EXPECT_EQ(ids.size(), 1u);
  const std::string bytes = copy->Encode();
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(AppliedIds::Decode(bytes.substr(0, n), std::chrono::seconds(120)).ok()) << n;
  }
}

TEST_F(ReplicaTest, ANewReplicaWaitsForAFrozenNatsToReadThePublishedSnapshot) {
  Node* a = StartNode("a");
  ASSERT_NE(a, nullptr);
  CreateEverywhere(*a, {a}, "ctr");
  LearnBatches(*a, 0, 5);
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  LearnBatches(*a, 10, 5);
  ASSERT_TRUE(a->replica->Snapshot(true).ok());
  // b starts with an empty volume while the only NATS server is frozen for
  // longer than one request's timeout (5 s): reading the stream and the
  // published snapshots is retried instead of failing the start.
  std::thread thaw;
  Node* b = StartNode("b", "", [&](ReplicaOptions* options) {
    options->restore_timeout = kWait;
    server_.Signal(SIGSTOP);
    thaw = std::thread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(6000));
      server_.Signal(SIGCONT);
    });
  });
  thaw.join();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->report.source, "published snapshot");
  CatchUp(*b);
  EXPECT_TRUE(StateOf(*a, "ctr") == StateOf(*b, "ctr"));
}

}  // namespace
}  // namespace replica_test
}  // namespace clickd
