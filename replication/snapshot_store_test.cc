// SnapshotStore against a real nats-server with JetStream, started by the
// test on a free 127.0.0.1 port with its own store directory and stopped by
// its PID.
#include "replication/snapshot_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "replication/nats_test_server.h"

namespace clickd {
namespace {

class SnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(clickd::testing::FreeLoopbackPort(), 0);
    ASSERT_TRUE(server_.Start());
    natsOptions* options = nullptr;
    ASSERT_EQ(natsOptions_Create(&options), NATS_OK);
    natsOptions_SetURL(options, server_.url().c_str());
    natsOptions_SetTimeout(options, 2000);
    natsOptions_SetReconnectWait(options, 100);
    const natsStatus connected = natsConnection_Connect(&nc_, options);
    natsOptions_Destroy(options);
    ASSERT_EQ(connected, NATS_OK) << natsStatus_GetText(connected);
    ASSERT_EQ(natsConnection_JetStream(&js_, nc_, nullptr), NATS_OK);
  }
  void TearDown() override {
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  std::unique_ptr<SnapshotStore> OpenStore(std::chrono::milliseconds timeout) {
    auto store = SnapshotStore::Open(js_, "SNAPTEST", "clickd.snaptest.snapshots", 1, timeout);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Messages on `subject` in the stream.
  uint64_t MessagesOn(const std::string& subject) {
    jsOptions options;
    jsOptions_Init(&options);
    options.Stream.Info.SubjectsFilter = subject.c_str();
    jsStreamInfo* info = nullptr;
    jsErrCode code;
    EXPECT_EQ(js_GetStreamInfo(&info, js_, "SNAPTEST", &options, &code), NATS_OK);
    uint64_t n = 0;
    if (info != nullptr && info->State.Subjects != nullptr) {
      for (int i = 0; i < info->State.Subjects->Count; ++i) {
        n += info->State.Subjects->List[i].Msgs;
      }
    }
    jsStreamInfo_Destroy(info);
    return n;
  }

  clickd::testing::NatsTestServer server_{"snapshot_store_test"};
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

TEST_F(SnapshotStoreTest, PublishKeepsTheNewestTwoAndFetchFallsBackPastDamage) {
  auto store = OpenStore(std::chrono::milliseconds(5000));
  ASSERT_NE(store, nullptr);
  auto listed = store->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty());
  std::vector<std::string> rejected;
  auto fetched = store->FetchNewest(&rejected);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_FALSE(fetched->has_value());

  // ~1 MB each: three full 256 KiB chunks and a partial one.
  const std::string a = RandomBytes(1000000, 1), b = RandomBytes(1000001, 2),
                    c = RandomBytes(999999, 3);
  ASSERT_TRUE(store->Publish(10, a).ok());
  ASSERT_TRUE(store->Publish(20, b).ok());
  absl::Status published = store->Publish(30, c);
  ASSERT_TRUE(published.ok()) << published;
  // A retried publish is deduplicated: no second copy.
  published = store->Publish(30, c);
  ASSERT_TRUE(published.ok()) << published;

  listed = store->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].sequence, 30u);
  EXPECT_EQ((*listed)[0].bytes, c.size());
  EXPECT_EQ((*listed)[1].sequence, 20u);
  EXPECT_EQ((*listed)[1].bytes, b.size());
  EXPECT_EQ(MessagesOn("clickd.snaptest.snapshots.chunk"), 8u);
  EXPECT_EQ(MessagesOn("clickd.snaptest.snapshots.manifest"), 2u);

  fetched = store->FetchNewest(&rejected);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_TRUE(fetched->has_value());
  EXPECT_EQ((*fetched)->first, 30u);
  EXPECT_TRUE((*fetched)->second == c);
  EXPECT_TRUE(rejected.empty());

  // Lose the newest snapshot's second chunk: its four chunks directly
  // precede its manifest (one publisher).
  natsMsg* manifest = nullptr;
  jsErrCode code;
  ASSERT_EQ(js_GetLastMsg(&manifest, js_, "SNAPTEST", "clickd.snaptest.snapshots.manifest", nullptr,
                          &code),
            NATS_OK);
  const uint64_t second_chunk = natsMsg_GetSequence(manifest) - 3;
  natsMsg_Destroy(manifest);
  ASSERT_EQ(js_DeleteMsg(js_, "SNAPTEST", second_chunk, nullptr, &code), NATS_OK);

  fetched = store->FetchNewest(&rejected);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_TRUE(fetched->has_value());
  EXPECT_EQ((*fetched)->first, 20u);
  EXPECT_TRUE((*fetched)->second == b);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].find("sequence 30"), std::string::npos) << rejected[0];
  EXPECT_NE(rejected[0].find("chunk 2 of 4"), std::string::npos) << rejected[0];
  EXPECT_NE(rejected[0].find("missing"), std::string::npos) << rejected[0];

  // A manifest that does not decode is reported and skipped.
  jsPubAck* ack = nullptr;
  ASSERT_EQ(js_Publish(&ack, js_, "clickd.snaptest.snapshots.manifest", "junk", 4, nullptr, &code),
            NATS_OK);
  jsPubAck_Destroy(ack);
  rejected.clear();
  fetched = store->FetchNewest(&rejected);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  ASSERT_TRUE(fetched->has_value());
  EXPECT_EQ((*fetched)->first, 20u);
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_NE(rejected[0].find("manifest is corrupt"), std::string::npos) << rejected[0];
  listed = store->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);
}

TEST_F(SnapshotStoreTest, OpenUsesAnExistingStream) {
  auto first = OpenStore(std::chrono::milliseconds(2000));
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->Publish(4, RandomBytes(1000, 4)).ok());
  auto second = OpenStore(std::chrono::milliseconds(2000));
  ASSERT_NE(second, nullptr);
  auto listed = second->List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].sequence, 4u);
}

TEST_F(SnapshotStoreTest, PublishFailsUnavailableWhenTheServerIsDown) {
  auto store = OpenStore(std::chrono::milliseconds(1000));
  ASSERT_NE(store, nullptr);
  server_.Stop();
  const auto start = std::chrono::steady_clock::now();
  absl::Status published = store->Publish(1, RandomBytes(300000, 5));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(published.code(), absl::StatusCode::kUnavailable) << published;
  EXPECT_EQ(published.message().rfind("NATS JetStream: did not acknowledge chunk 1 of 2", 0), 0u)
      << published;
  // Bounded by the timeout (one unacknowledged chunk), not a hang; the
  // margin is generous, this is no performance check.
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  std::vector<std::string> rejected;
  auto fetched = store->FetchNewest(&rejected);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kUnavailable) << fetched.status();
}

}  // namespace
}  // namespace clickd
