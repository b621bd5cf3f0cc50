// JetStreamLog against a real single-node nats-server with JetStream
// (started by the test on a free 127.0.0.1 port, stopped by its PID): publish
// and its deduplication, the record size limit, purges, NATS going away, and
// the ordered Reader.
#include "replication/jetstream_log.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "replication/nats_server_version.h"
#include "replication/nats_test_server.h"

namespace clickd {
namespace {

using ::clickd::testing::NatsTestServer;
using ::clickd::testing::StopServerAndAwaitDisconnected;
using Records = std::vector<std::pair<uint64_t, std::string>>;
constexpr std::chrono::milliseconds kTimeout{1000};

class JetStreamLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    NatsConnectionOptions options;
    options.urls = server_.url();
    options.name = "jetstream_log_test";
    options.timeout = std::chrono::milliseconds(1000);
    auto nats = NatsConnection::Connect(options);
    ASSERT_TRUE(nats.ok()) << nats.status();
    nats_ = *std::move(nats);
  }
  void TearDown() override {
    if (nats_ != nullptr) StopServerAndAwaitDisconnected(server_, {nats_.get()});
  }

  // Opens the test stream (R=1: one server).
  std::unique_ptr<JetStreamLog> OpenLog(int32_t max_record_bytes = 1 << 20) {
    JetStreamLogOptions options;
    options.stream = "LOGTEST";
    options.subject = "clickd.logtest.log";
    options.replicas = 1;
    options.max_record_bytes = max_record_bytes;
    auto log = JetStreamLog::Open(nats_.get(), options);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }

  NatsTestServer server_{"jetstream_log_test"};
  std::unique_ptr<NatsConnection> nats_;
};

// Publishes `record` under a message id of its own; its sequence (0 on
// failure, which fails the test).
uint64_t Publish(JetStreamLog& log, const std::string& record) {
  static int next_id = 0;
  auto ack = log.Publish(record, absl::StrCat("test-", ++next_id), kTimeout);
  EXPECT_TRUE(ack.ok()) << ack.status();
  return ack.ok() ? ack->sequence : 0;
}

uint64_t LastSequence(JetStreamLog& log) {
  auto state = log.State();
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? state->last_sequence : 0;
}

// Publishes "r<sequence>" records until the stream's last sequence is
// `last`.
void PublishThrough(JetStreamLog& log, uint64_t last) {
  for (int i = 0; i < 1000 && LastSequence(log) < last; ++i) {
    ASSERT_GT(Publish(log, absl::StrCat("r", LastSequence(log) + 1)), 0u);
  }
  ASSERT_EQ(LastSequence(log), last);
}

// What a Reader from `first` delivers up to the stream's last sequence now.
Records ReadAll(JetStreamLog& log, uint64_t first = 1) {
  Records out;
  const uint64_t last = LastSequence(log);
  auto reader = log.ReadFrom(first);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  while (out.empty() || out.back().first < last) {
    auto message = (*reader)->Next(std::chrono::milliseconds(300));
    EXPECT_TRUE(message.ok()) << message.status();
    if (!message.ok() || !message->has_value()) break;  // nothing more (or an empty stream)
    out.emplace_back((**message)->sequence(), std::string((**message)->data()));
  }
  return out;
}

TEST_F(JetStreamLogTest, SequencesAreConsecutiveFromOne) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  auto empty = log->State();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->last_sequence, 0u);
  EXPECT_EQ(empty->messages, 0u);
  EXPECT_EQ(Publish(*log, "a"), 1u);
  EXPECT_EQ(Publish(*log, ""), 2u);
  EXPECT_EQ(Publish(*log, std::string(1000, 'x')), 3u);
  auto state = log->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->first_sequence, 1u);
  EXPECT_EQ(state->last_sequence, 3u);
  EXPECT_EQ(state->messages, 3u);
  EXPECT_GE(state->bytes, 1001u);
  EXPECT_EQ(ReadAll(*log), (Records{{1, "a"}, {2, ""}, {3, std::string(1000, 'x')}}));
}

TEST_F(JetStreamLogTest, PurgeBelowDropsOnlyOlderRecordsAndKeepsTheSequence) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  PublishThrough(*log, 6);
  ASSERT_TRUE(log->PurgeBelow(5).ok());
  auto state = log->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->first_sequence, 5u);
  EXPECT_EQ(state->last_sequence, 6u);
  EXPECT_EQ(ReadAll(*log), (Records{{5, "r5"}, {6, "r6"}}));
  EXPECT_EQ(Publish(*log, "r7"), 7u);
}

TEST_F(JetStreamLogTest, PurgeBelowZeroOrOneRemovesNothing) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  PublishThrough(*log, 3);
  ASSERT_TRUE(log->PurgeBelow(0).ok());
  ASSERT_TRUE(log->PurgeBelow(1).ok());
  auto state = log->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->first_sequence, 1u);
  EXPECT_EQ(state->messages, 3u);
  ASSERT_TRUE(log->PurgeBelow(3).ok());
  EXPECT_EQ(ReadAll(*log), (Records{{3, "r3"}}));
}

TEST_F(JetStreamLogTest, PublishDeduplicatesByMessageId) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  auto first = log->Publish("one", "id-1", kTimeout);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_FALSE(first->duplicate);
  auto other = log->Publish("two", "id-2", kTimeout);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->sequence, 2u);
  auto again = log->Publish("one, retried", "id-1", kTimeout);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->sequence, 1u);
  EXPECT_EQ(LastSequence(*log), 2u);
  EXPECT_EQ(ReadAll(*log), (Records{{1, "one"}, {2, "two"}}));
}

TEST_F(JetStreamLogTest, ARecordOverTheLimitIsRefusedNamingTheLimit) {
  auto log = OpenLog(64 << 10);
  ASSERT_NE(log, nullptr);
  const int64_t limit = log->max_record_bytes();
  ASSERT_EQ(limit, (64 << 10) - 4096);
  const std::string big(limit + 1, 'x');
  auto published = log->Publish(big, "big", kTimeout);
  EXPECT_EQ(published.status().code(), absl::StatusCode::kResourceExhausted) << published.status();
  EXPECT_NE(published.status().message().find(absl::StrCat("at most ", limit)), std::string::npos)
      << published.status();
  EXPECT_EQ(LastSequence(*log), 0u);
  // At the limit it goes in.
  EXPECT_EQ(Publish(*log, std::string(limit, 'y')), 1u);
}

TEST_F(JetStreamLogTest, PublishFailsUnavailableNamingNatsWhenTheServerIsGone) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  PublishThrough(*log, 2);
  server_.Stop();
  const auto start = std::chrono::steady_clock::now();
  auto published = log->Publish("lost", "lost-1", kTimeout);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(published.status().code(), absl::StatusCode::kUnavailable) << published.status();
  EXPECT_NE(published.status().message().find("NATS"), std::string::npos) << published.status();
  // Within the 1 s timeout, give or take scheduling; no performance check.
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  EXPECT_EQ(log->State().status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(JetStreamLogTest, AReaderDeliversInOrderFromItsStartSequence) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  PublishThrough(*log, 10);
  auto reader = log->ReadFrom(4);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (uint64_t expected = 4; expected <= 10; ++expected) {
    auto message = (*reader)->Next(std::chrono::milliseconds(5000));
    ASSERT_TRUE(message.ok()) << message.status();
    ASSERT_TRUE(message->has_value()) << "record " << expected << " never came";
    EXPECT_EQ((**message)->sequence(), expected);
    EXPECT_EQ((**message)->data(), absl::StrCat("r", expected));
    EXPECT_EQ((**message)->pending(), 10 - expected);
    EXPECT_FALSE((**message)->msg_id().empty());
    EXPECT_GT((**message)->unix_nanos(), 0);
  }
  // Nothing more until something is published, which it then delivers.
  auto none = (*reader)->Next(std::chrono::milliseconds(200));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_EQ(Publish(*log, "r11"), 11u);
  auto next = (*reader)->Next(std::chrono::milliseconds(5000));
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((**next)->sequence(), 11u);
  EXPECT_EQ((**next)->data(), "r11");
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

TEST(NatsServerVersion, ParsesReleasesAndRefusesTheRest) {
  EXPECT_EQ(ParseServerVersion("2.15.3"), (std::array<int, 3>{2, 15, 3}));
  EXPECT_EQ(ParseServerVersion("v2.9.10"), (std::array<int, 3>{2, 9, 10}));
  EXPECT_EQ(ParseServerVersion("2.16.0-beta.1"), (std::array<int, 3>{2, 16, 0}));
  for (const char* bad : {"", "2.15", "2.x.1", "2.15.3.4", "-1.0.0"}) {
    EXPECT_FALSE(ParseServerVersion(bad).has_value()) << bad;
  }
}

TEST_F(JetStreamLogTest, TheServersVersionIsReadFromItsInfoLineAndCheckedAgainstTheMinimum) {
  auto version = ReadServerVersion(server_.url(), std::chrono::milliseconds(5000));
  ASSERT_TRUE(version.ok()) << version.status();
  ASSERT_TRUE(ParseServerVersion(*version).has_value()) << *version;
  EXPECT_TRUE(CheckServerVersions(server_.url(), *version).ok());
  EXPECT_TRUE(CheckServerVersions(server_.url(), "2.0.0").ok());
  const absl::Status old = CheckServerVersions(server_.url(), "99.0.0");
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition) << old;
  EXPECT_NE(old.message().find(*version), std::string::npos) << old;
  EXPECT_NE(old.message().find("--nats_min_server_version=99.0.0"), std::string::npos) << old;
  // A server that does not answer cannot be checked now: not a refusal.
  EXPECT_TRUE(CheckServerVersions("nats://127.0.0.1:1", "99.0.0").ok());
}

}  // namespace
}  // namespace clickd
