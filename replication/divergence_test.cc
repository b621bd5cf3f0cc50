#include "replication/divergence.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

using Clock = DivergenceMonitor::Clock;

DivergenceMonitor::Options Named(const std::string& instance) {
  DivergenceMonitor::Options options;
  options.instance = instance;
  options.chain_history = 64;
  return options;
}

// Applies records 1..n ("r1", "r2", ... with `fork` replacing record
// `fork_at`) to `monitor`.
void ApplyRecords(DivergenceMonitor* monitor, uint64_t from, uint64_t to, uint64_t fork_at = 0) {
  for (uint64_t s = from; s <= to; ++s) {
    monitor->Applied(s, s == fork_at ? "forked" : "r" + std::to_string(s));
  }
}

TEST(LogChain, DependsOnEveryRecordAndSequence) {
  const LogDigest a = ExtendLogChain({}, 1, "x");
  EXPECT_EQ(a, ExtendLogChain({}, 1, "x"));
  EXPECT_FALSE(a == ExtendLogChain({}, 2, "x"));
  EXPECT_FALSE(a == ExtendLogChain({}, 1, "y"));
  EXPECT_FALSE(ExtendLogChain(a, 2, "z") == ExtendLogChain({}, 2, "z"));
  EXPECT_EQ(LogDigestHex(a).size(), 32u);
}

TEST(Checkpoint, RoundTripsAndRejectsDamage) {
  Checkpoint c;
  c.instance = "a-1";
  c.replica = "a";
  c.applied_sequence = 42;
  c.healthy = false;
  c.chain_known = true;
  c.chain = {7, 9};
  c.state_sequence = 40;
  c.state_digest = 0xabc;
  const std::string bytes = EncodeCheckpoint(c);
  auto back = DecodeCheckpoint(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->instance, "a-1");
  EXPECT_EQ(back->applied_sequence, 42u);
  EXPECT_FALSE(back->healthy);
  EXPECT_TRUE(back->chain_known);
  EXPECT_EQ(back->chain, (LogDigest{7, 9}));
  EXPECT_EQ(back->state_digest, 0xabcu);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x20;
    EXPECT_FALSE(DecodeCheckpoint(damaged).ok()) << "byte " << i;
  }
  EXPECT_FALSE(DecodeCheckpoint(bytes.substr(0, bytes.size() - 1)).ok());
  EXPECT_FALSE(DecodeCheckpoint("").ok());
}

TEST(DivergenceMonitor, EqualLogsAgreeWhateverTheOrderOfArrival) {
  DivergenceMonitor a(Named("a")), b(Named("b"));
  a.Reset(0, LogDigest{});
  b.Reset(0, LogDigest{});
  ApplyRecords(&a, 1, 10);
  ApplyRecords(&b, 1, 5);
  // a is ahead: b keeps a's checkpoint until it gets there.
  b.OnPeer(a.Current("a", true), Clock::now());
  EXPECT_EQ(b.Report(Clock::now()).comparisons, 0u);
  ApplyRecords(&b, 6, 10);
  EXPECT_EQ(b.Report(Clock::now()).comparisons, 1u);
  // b behind a: a compares at once from its history.
  a.OnPeer(b.Current("b", true), Clock::now());
  for (const DivergenceMonitor* m : {&a, &b}) {
    const DivergenceReport r = m->Report(Clock::now());
    EXPECT_FALSE(r.diverged) << r.reason;
    EXPECT_EQ(r.peers_agreeing, 1);
    EXPECT_EQ(r.mismatches, 0u);
  }
}

TEST(DivergenceMonitor, OneForkedRecordIsCaughtAndTheMinorityLatches) {
  DivergenceMonitor a(Named("a")), b(Named("b")), c(Named("c"));
  for (DivergenceMonitor* m : {&a, &b, &c}) m->Reset(0, LogDigest{});
  ApplyRecords(&a, 1, 20, /*fork_at=*/7);
  ApplyRecords(&b, 1, 20);
  ApplyRecords(&c, 1, 20);
  const auto now = Clock::now();
  // b hears the odd one first: a tie, diverged but not latched.
  b.OnPeer(a.Current("a", true), now);
  EXPECT_TRUE(b.Report(now).diverged);
  b.OnPeer(c.Current("c", true), now);
  EXPECT_FALSE(b.Report(now).diverged) << b.Report(now).reason;
  EXPECT_EQ(b.Report(now).peers_disagreeing, 1);
  ASSERT_EQ(b.Report(now).disagreeing.size(), 1u);
  EXPECT_EQ(b.Report(now).disagreeing[0], "a (a)");
  a.OnPeer(b.Current("b", true), now);
  a.OnPeer(c.Current("c", true), now);
  const DivergenceReport r = a.Report(now);
  EXPECT_TRUE(r.diverged);
  EXPECT_NE(r.reason.find("log chain at sequence 20"), std::string::npos) << r.reason;
  // Latched: forgetting the peers does not heal it.
  EXPECT_TRUE(a.Report(now + std::chrono::hours(1)).diverged);
  EXPECT_FALSE(a.Current("a", true).healthy);
}

TEST(DivergenceMonitor, StateDigestsAreComparedAtEqualSequences) {
  DivergenceMonitor a(Named("a")), b(Named("b"));
  a.Reset(100, std::nullopt);  // restored from a snapshot without a chain
  b.Reset(100, LogDigest{5, 5});
  ApplyRecords(&a, 101, 110);
  ApplyRecords(&b, 101, 110);
  a.StateDigestAt(110, 1234);
  b.OnPeer(a.Current("a", true), Clock::now());  // chains: not comparable
  EXPECT_EQ(b.Report(Clock::now()).comparisons, 0u);
  b.StateDigestAt(110, 9999);  // the pending state digest is compared now
  const DivergenceReport r = b.Report(Clock::now());
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_TRUE(r.diverged);  // a tie between two replicas
  EXPECT_NE(r.reason.find("state digest at sequence 110"), std::string::npos) << r.reason;
}

TEST(DivergenceMonitor, MarkDivergedLatchesAndRetentionFollowsLivePeers) {
  DivergenceMonitor a(Named("a"));
  a.Reset(0, LogDigest{});
  ApplyRecords(&a, 1, 50);
  Checkpoint slow;
  slow.instance = "slow-1";
  slow.replica = "slow";
  slow.applied_sequence = 12;
  const auto now = Clock::now();
  a.OnPeer(slow, now);
  EXPECT_EQ(a.Report(now).min_live_applied, 12u);
  // A peer not heard from within the TTL no longer holds the log back.
  EXPECT_EQ(a.Report(now + std::chrono::minutes(1)).min_live_applied, 50u);
  slow.healthy = false;  // a broken peer does not either
  a.OnPeer(slow, now);
  EXPECT_EQ(a.Report(now).min_live_applied, 50u);
  a.MarkDiverged("acknowledged at 7, delivered at 8");
  EXPECT_TRUE(a.Report(now).diverged);
  EXPECT_EQ(a.Report(now).reason, "acknowledged at 7, delivered at 8");
}

TEST(DivergenceMonitor, TracksAtMost64LivePeersAndForgetsSilentOnes) {
  DivergenceMonitor a(Named("a"));
  a.Reset(0, LogDigest{});
  const auto now = Clock::now();
  Checkpoint c;
  for (int i = 0; i < 1000; ++i) {  // a flood of made-up instances
    c.instance = "fake-" + std::to_string(i);
    a.OnPeer(c, now);
  }
  EXPECT_EQ(a.Report(now).refused_peers, 1000u - 64u);
  // Once they fall silent past the TTL they are forgotten: a real peer fits.
  c.instance = "real";
  c.applied_sequence = 0;
  a.OnPeer(c, now + std::chrono::minutes(1));
  EXPECT_EQ(a.Report(now + std::chrono::minutes(1)).refused_peers, 1000u - 64u);
  c.instance = "real-2";
  a.OnPeer(c, now + std::chrono::minutes(1));
  EXPECT_EQ(a.Report(now + std::chrono::minutes(1)).refused_peers, 1000u - 64u);
}

}  // namespace
}  // namespace clickd
