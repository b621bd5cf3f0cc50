// SnapshotStore against a real nats-server with JetStream, started by the
// test on a free 127.0.0.1 port with its own store directory and stopped by
// its PID.
#include "replication/snapshot_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "gtest/gtest.h"

extern char** environ;

namespace clickd {
namespace {

// A port the kernel just handed out (and released) on 127.0.0.1.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// One nats-server with JetStream, for one test.
class NatsServer {
 public:
  NatsServer() {
    static int n = 0;
    dir_ = ::testing::TempDir() + "/snapshot_store_test_" + std::to_string(getpid()) + "_" +
           std::to_string(n++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = FreePort();
  }
  ~NatsServer() {
    Stop();
    std::filesystem::remove_all(dir_);
  }

  // Starts the server and waits (bounded) until it accepts connections.
  bool Start() {
    const std::string port = std::to_string(port_), log = dir_ + "/nats-server.log",
                      store = dir_ + "/jetstream";
    std::vector<std::string> args = {
        CLICKD_NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", port, "-sd", store, "-l", log};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
      return false;
    }
    for (int i = 0; i < 200; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port_));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const bool up = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
      close(fd);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Stops the server by its PID: SIGTERM, then SIGKILL after ~5 s.
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string dir_;
  int port_ = -1;
  pid_t pid_ = -1;
};

class SnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(FreePort(), 0);
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

  NatsServer server_;
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
