// NatsTestServer: one real single-node nats-server with JetStream for the
// replication tests (jetstream_log_test.cc, replica_test.cc,
// snapshot_store_test.cc), on a free
// 127.0.0.1 port with its store in a temporary directory, stopped by its
// PID (never by name). Test-only and header-only.
//
// Thread safety: externally synchronized (the test's thread drives it).
#ifndef CLICKD_REPLICATION_NATS_TEST_SERVER_H_
#define CLICKD_REPLICATION_NATS_TEST_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "replication/nats_connection.h"

extern char** environ;

namespace clickd::testing {

#ifndef CLICKD_NATS_SERVER
#define CLICKD_NATS_SERVER "/usr/local/bin/nats-server"
#endif

// A port the kernel just handed out (and released) on 127.0.0.1.
inline int FreeLoopbackPort() {
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

class NatsTestServer {
 public:
  // `name` tells the temporary directories of several tests apart.
  explicit NatsTestServer(const std::string& name) {
    static int n = 0;
    dir_ = ::testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + "_" +
           std::to_string(n++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = FreeLoopbackPort();
  }
  ~NatsTestServer() {
    Stop();
    std::filesystem::remove_all(dir_);
  }
  NatsTestServer(const NatsTestServer&) = delete;
  NatsTestServer& operator=(const NatsTestServer&) = delete;

  // Starts the server and waits (at most ~10 s) until it accepts
  // connections.
  bool Start() {
    if (port_ <= 0) return false;
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
  // Sends `sig` to the server (SIGSTOP / SIGCONT freeze and thaw it).
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

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
  // A directory of this server's that the test may use (removed with it).
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int port_ = -1;
  pid_t pid_ = -1;
};

// Stops `server` and waits (bounded) until every connection in `connections`
// has seen it go, so that destroying them afterwards is safe.
//
// Why: ~NatsConnection closes a connected natsConnection, and nats.c then
// delivers the disconnected callback on its own thread, after the
// NatsConnection it points at was freed (ASan: heap-use-after-free in
// NatsConnection::OnDisconnected). Once the callback has run for the
// server's exit, closing a disconnected connection posts no other.
inline void StopServerAndAwaitDisconnected(NatsTestServer& server,
                                           const std::vector<const NatsConnection*>& connections) {
  server.Stop();
  for (const NatsConnection* connection : connections) {
    for (int i = 0; i < 200 && connection->connected(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_FALSE(connection->connected()) << "a NATS connection never saw the server stop";
  }
}

}  // namespace clickd::testing

#endif  // CLICKD_REPLICATION_NATS_TEST_SERVER_H_
