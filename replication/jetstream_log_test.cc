// JetStreamLog against a real single-node nats-server with JetStream
// (started by the test on a free 127.0.0.1 port, stopped by its PID): the
// UpdateLog contract (core/persist/update_log.h) as far as a stream keeps it,
// publish deduplication, the record size limit, purges, NATS going away, and
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

Records ReadAll(UpdateLog& log, uint64_t after = 0) {
  Records out;
  const absl::Status s = log.ReadAfter(after, [&](uint64_t sequence, std::string_view record) {
    out.emplace_back(sequence, std::string(record));
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// Appends "r<sequence>" records until the log's last sequence is `last`.
void AppendThrough(UpdateLog& log, uint64_t last) {
  for (int i = 0; i < 1000 && log.last_sequence() < last; ++i) {
    auto sequence = log.Append(absl::StrCat("r", log.last_sequence() + 1));
    ASSERT_TRUE(sequence.ok()) << sequence.status();
  }
  ASSERT_EQ(log.last_sequence(), last);
}

TEST_F(JetStreamLogTest, SequencesAreConsecutiveFromOne) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 0u);
  EXPECT_EQ(log->size_bytes(), 0u);
  EXPECT_TRUE(ReadAll(*log).empty());
  EXPECT_EQ(*log->Append("a"), 1u);
  EXPECT_EQ(*log->Append(""), 2u);
  EXPECT_EQ(*log->Append(std::string(1000, 'x')), 3u);
  EXPECT_TRUE(log->WaitDurable(3).ok());
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_GE(log->size_bytes(), 1001u);
  EXPECT_EQ(ReadAll(*log), (Records{{1, "a"}, {2, ""}, {3, std::string(1000, 'x')}}));
}

TEST_F(JetStreamLogTest, ReadAfterVisitsLaterRecordsInOrderAndStopsAtAnError) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 5);
  EXPECT_EQ(ReadAll(*log, 2), (Records{{3, "r3"}, {4, "r4"}, {5, "r5"}}));
  EXPECT_TRUE(ReadAll(*log, 5).empty());
  EXPECT_TRUE(ReadAll(*log, 9).empty());
  int calls = 0;
  const absl::Status s = log->ReadAfter(0, [&](uint64_t sequence, std::string_view) {
    ++calls;
    // Without a lock of the log's: calling into it does not deadlock.
    EXPECT_EQ(log->last_sequence(), 5u);
    return sequence == 2 ? absl::DataLossError("stop") : absl::OkStatus();
  });
  EXPECT_EQ(s, absl::DataLossError("stop"));
  EXPECT_EQ(calls, 2);
}

TEST_F(JetStreamLogTest, ReadAfterStopsAtTheLastSequenceWhenCalled) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 3);
  Records seen;
  const absl::Status s = log->ReadAfter(0, [&](uint64_t sequence, std::string_view record) {
    seen.emplace_back(sequence, std::string(record));
    // Records appended during the read are not part of it.
    if (sequence == 1) {
      EXPECT_TRUE(log->Append("late").ok());
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, (Records{{1, "r1"}, {2, "r2"}, {3, "r3"}}));
  EXPECT_EQ(log->last_sequence(), 4u);
}

TEST_F(JetStreamLogTest, ReadAfterReportsARecordMissingInsideTheStreamAsDataLoss) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 5);
  jsErrCode code;
  ASSERT_EQ(js_DeleteMsg(nats_->jetstream(), "LOGTEST", 3, nullptr, &code), NATS_OK);
  Records seen;
  absl::Status s = log->ReadAfter(0, [&](uint64_t sequence, std::string_view record) {
    seen.emplace_back(sequence, std::string(record));
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("records 3..3"), std::string::npos) << s;
  EXPECT_EQ(seen, (Records{{1, "r1"}, {2, "r2"}}));

  // The newest record gone: nothing after 4 although the stream ends at 5.
  ASSERT_EQ(js_DeleteMsg(nats_->jetstream(), "LOGTEST", 5, nullptr, &code), NATS_OK);
  seen.clear();
  s = log->ReadAfter(3, [&](uint64_t sequence, std::string_view record) {
    seen.emplace_back(sequence, std::string(record));
    return absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("records 5..5"), std::string::npos) << s;
  EXPECT_EQ(seen, (Records{{4, "r4"}}));
}

TEST_F(JetStreamLogTest, TruncateThroughDropsOnlyOldRecordsAndKeepsTheSequence) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 6);
  ASSERT_TRUE(log->TruncateThrough(4).ok());
  EXPECT_EQ(log->first_sequence(), 5u);
  EXPECT_EQ(log->last_sequence(), 6u);
  EXPECT_EQ(ReadAll(*log), (Records{{5, "r5"}, {6, "r6"}}));
  // Records before the first kept one are not "kept after 0": no error.
  EXPECT_EQ(ReadAll(*log, 2), (Records{{5, "r5"}, {6, "r6"}}));
  EXPECT_EQ(*log->Append("r7"), 7u);

  // Everything, and past the end: the stream is empty but does not start
  // over, and its sequences do not move.
  ASSERT_TRUE(log->TruncateThrough(100).ok());
  EXPECT_EQ(log->last_sequence(), 7u);
  EXPECT_EQ(log->first_sequence(), 8u);
  EXPECT_EQ(log->size_bytes(), 0u);
  EXPECT_TRUE(ReadAll(*log).empty());
  EXPECT_EQ(*log->Append("r8"), 8u);
  EXPECT_EQ(log->first_sequence(), 8u);
  EXPECT_EQ(ReadAll(*log), (Records{{8, "r8"}}));
}

TEST_F(JetStreamLogTest, PurgeBelowZeroOrOneRemovesNothing) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 3);
  ASSERT_TRUE(log->PurgeBelow(0).ok());
  ASSERT_TRUE(log->PurgeBelow(1).ok());
  auto state = log->State();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->first_sequence, 1u);
  EXPECT_EQ(state->messages, 3u);
  ASSERT_TRUE(log->PurgeBelow(3).ok());
  EXPECT_EQ(ReadAll(*log), (Records{{3, "r3"}}));
}

TEST_F(JetStreamLogTest, ResetAfterOnlyAcceptsTheStreamsOwnPosition) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 3);
  absl::Status refused = log->ResetAfter(2);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(refused.message().rfind("a JetStream stream's sequences cannot be moved; ", 0), 0u)
      << refused;
  EXPECT_NE(refused.message().find("holds records after 2"), std::string::npos) << refused;
  refused = log->ResetAfter(20);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(refused.message().rfind("a JetStream stream's sequences cannot be moved; ", 0), 0u)
      << refused;
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_EQ(ReadAll(*log).size(), 3u);

  // At its last record the stream already continues after it: the records
  // it holds are dropped.
  ASSERT_TRUE(log->ResetAfter(3).ok());
  EXPECT_EQ(log->first_sequence(), 4u);
  EXPECT_EQ(log->last_sequence(), 3u);
  EXPECT_TRUE(ReadAll(*log).empty());
  EXPECT_EQ(*log->Append("r4"), 4u);
}

TEST_F(JetStreamLogTest, PublishDeduplicatesByMessageId) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  const auto timeout = std::chrono::milliseconds(1000);
  auto first = log->Publish("one", "id-1", timeout);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_FALSE(first->duplicate);
  auto other = log->Publish("two", "id-2", timeout);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->sequence, 2u);
  auto again = log->Publish("one, retried", "id-1", timeout);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->sequence, 1u);
  EXPECT_EQ(log->last_sequence(), 2u);
  EXPECT_EQ(ReadAll(*log), (Records{{1, "one"}, {2, "two"}}));
  // Append's ids are its own: two equal records are two records.
  EXPECT_EQ(*log->Append("same"), 3u);
  EXPECT_EQ(*log->Append("same"), 4u);
}

TEST_F(JetStreamLogTest, ARecordOverTheLimitIsRefusedNamingTheLimit) {
  auto log = OpenLog(64 << 10);
  ASSERT_NE(log, nullptr);
  const int64_t limit = log->max_record_bytes();
  ASSERT_EQ(limit, (64 << 10) - 4096);
  const std::string big(limit + 1, 'x');
  auto published = log->Publish(big, "big", std::chrono::milliseconds(1000));
  EXPECT_EQ(published.status().code(), absl::StatusCode::kResourceExhausted) << published.status();
  EXPECT_NE(published.status().message().find(absl::StrCat("at most ", limit)), std::string::npos)
      << published.status();
  auto appended = log->Append(big);
  EXPECT_EQ(appended.status().code(), absl::StatusCode::kResourceExhausted) << appended.status();
  EXPECT_EQ(log->last_sequence(), 0u);
  // At the limit it goes in.
  EXPECT_EQ(*log->Append(std::string(limit, 'y')), 1u);
}

TEST_F(JetStreamLogTest, AppendFailsUnavailableNamingNatsWhenTheServerIsGone) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 2);
  server_.Stop();
  const auto start = std::chrono::steady_clock::now();
  auto appended = log->Append("lost");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(appended.status().code(), absl::StatusCode::kUnavailable) << appended.status();
  EXPECT_NE(appended.status().message().find("NATS"), std::string::npos) << appended.status();
  // Within the 1 s timeout, give or take scheduling; no performance check.
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  // The accessors fall back to the last state seen.
  EXPECT_EQ(log->last_sequence(), 2u);
  EXPECT_EQ(log->first_sequence(), 1u);
  EXPECT_EQ(log->State().status().code(), absl::StatusCode::kUnavailable);
  Records seen;
  const absl::Status read = log->ReadAfter(0, [&](uint64_t sequence, std::string_view record) {
    seen.emplace_back(sequence, std::string(record));
    return absl::OkStatus();
  });
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable) << read;
  EXPECT_TRUE(seen.empty());
}

TEST_F(JetStreamLogTest, AReaderDeliversInOrderFromItsStartSequence) {
  auto log = OpenLog();
  ASSERT_NE(log, nullptr);
  AppendThrough(*log, 10);
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
  // Nothing more until something is appended, which it then delivers.
  auto none = (*reader)->Next(std::chrono::milliseconds(200));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  ASSERT_EQ(*log->Append("r11"), 11u);
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
