// RestartableServer: a real clickd on a data directory of its own (one per
// test), which an integration test starts, kills with SIGKILL and starts
// again on the same directory, with a client, `clickctl` against it and its
// /metrics. The including test target defines CLICKCTL_PATH.
#ifndef CLICKD_TESTS_RESTARTABLE_SERVER_H_
#define CLICKD_TESTS_RESTARTABLE_SERVER_H_

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/test_util.h"

#ifndef CLICKCTL_PATH
#error "the test target must define CLICKCTL_PATH (tests/CMakeLists.txt)"
#endif

namespace clickd::testing {

// The value of `series` in a Prometheus text exposition, if it is there.
inline std::optional<double> Sample(const std::string& body, const std::string& series) {
  const std::string prefix = series + " ";
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return std::nullopt;
}

// A clickd on a data directory of its own (one per test), which a test
// starts, kills with SIGKILL and starts again on the same directory.
class RestartableServer {
 public:
  explicit RestartableServer(const std::string& name)
      : dir_(absl::StrCat(::testing::TempDir(), "/", name, "_", getpid())) {
    std::filesystem::remove_all(dir_);
  }

  // Starts the server (with `more_flags`) on free ports, and a client of it; false (with the
  // failure reported) if either fails.
  bool Start(const std::vector<std::string>& more_flags = {}) {
    auto port = FindFreePort();
    EXPECT_TRUE(port.ok()) << port.status();
    if (!port.ok()) return false;
    metrics_port_ = *port;
    ServerOptions options;
    options.flags = {"--data_dir=" + dir_, "--snapshot_interval=0",
                     absl::StrCat("--metrics_port=", metrics_port_)};
    options.flags.insert(options.flags.end(), more_flags.begin(), more_flags.end());
    auto server = ServerProcess::Start(std::move(options));
    EXPECT_TRUE(server.ok()) << server.status();
    if (!server.ok()) return false;
    server_ = *std::move(server);
    auto client = ClickdClient::Create(server_->address());
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return false;
    client_ = *std::move(client);
    return true;
  }

  // SIGKILL, and waits for the process to end.
  void Kill() {
    client_.reset();
    server_->Signal(SIGKILL);
    EXPECT_TRUE(server_->WaitForExit(std::chrono::seconds(20)).has_value());
    server_.reset();
  }

  // `clickctl ARGS --server=...`.
  CommandResult Clickctl(const std::string& args) {
    return RunCommand(absl::StrCat(CLICKCTL_PATH, " ", args, " --server=", server_->address()),
                      absl::Seconds(120));
  }

  ClickdClient& client() { return *client_; }

  // The series' value on /metrics, if it is there.
  std::optional<double> Metric(const std::string& series) {
    httplib::Client http("127.0.0.1", metrics_port_);
    http.set_read_timeout(10);
    auto response = http.Get("/metrics");
    EXPECT_TRUE(response) << httplib::to_string(response.error());
    if (!response) return std::nullopt;
    return Sample(response->body, series);
  }

 private:
  const std::string dir_;
  int metrics_port_ = 0;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<ClickdClient> client_;
};

}  // namespace clickd::testing

#endif  // CLICKD_TESTS_RESTARTABLE_SERVER_H_
