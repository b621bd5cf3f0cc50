#include "tests/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/child_process.h"

namespace clickd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What clickd prints once it listens and has set its health status.
constexpr char kReadyLine[] = "clickd: serving ";
// What clickd prints when it cannot bind its address (say, we lost the race
// for a free port).
constexpr char kCannotListen[] = "clickd: cannot listen on ";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::string> MakeLogFile() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = absl::StrCat(dir != nullptr && *dir != '\0' ? dir : "/tmp", "/clickd_XXXXXX");
  const int fd = mkstemp(path.data());
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  close(fd);
  return path;
}

// Starts `binary` with `args`, its stdout and stderr to `log_path`.
absl::StatusOr<pid_t> Spawn(const std::string& binary, const std::vector<std::string>& args,
                            const std::string& log_path) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Spawn(argv, {.stdout_path = log_path});
}

std::string DefaultBinary() { return CLICKD_BINARY; }

}  // namespace

absl::StatusOr<int> FindFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("bind 127.0.0.1:0: ", std::strerror(error)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
    milliseconds timeout) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return response.status();
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(ServerOptions options) {
  const std::string binary = options.binary.empty() ? DefaultBinary() : options.binary;
  const auto deadline = Clock::now() + options.ready_timeout;
  std::string output;
  for (int attempt = 1; attempt <= options.port_attempts; ++attempt) {
    auto port = FindFreePort();
    if (!port.ok()) return port.status();
    auto log_path = MakeLogFile();
    if (!log_path.ok()) return log_path.status();
    const std::string address = absl::StrCat("127.0.0.1:", *port);
    // No /metrics endpoint unless the test asks for one: servers running
    // side by side would all want the default port.
    std::vector<std::string> args = {"--address=" + address, "--metrics_port=0"};
    args.insert(args.end(), options.flags.begin(), options.flags.end());
    auto pid = Spawn(binary, args, *log_path);
    if (!pid.ok()) {
      std::remove(log_path->c_str());
      return pid.status();
    }
    // From here the destructor stops the server and removes the log on
    // every return but the successful one.
    std::unique_ptr<ServerProcess> server(
        new ServerProcess(*pid, address, *log_path, options.channel_credentials));
    while (Clock::now() < deadline) {
      if (server->Poll()) break;
      if (absl::StrContains(server->Output(), kReadyLine) &&
          CheckHealth(server->NewChannel(), "", milliseconds(1'000)).ok()) {
        return server;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    output = server->Output();
    if (server->running()) {
      return absl::DeadlineExceededError(absl::StrCat(binary, " was not ready within ",
                                                      options.ready_timeout.count(),
                                                      " ms; its output:\n", output));
    }
    if (!absl::StrContains(output, kCannotListen)) {
      return absl::FailedPreconditionError(
          absl::StrCat(binary, " ended (", server->exit_->ToString(),
                       ") before it was ready; its output:\n", output));
    }
    // Lost the race for the port to another process: try another port.
  }
  return absl::UnavailableError(absl::StrCat("no free port after ", options.port_attempts,
                                             " attempts; the last output:\n", output));
}

ServerProcess::~ServerProcess() {
  const ExitStatus status = Stop();
  const std::string output = Output();
  if (!status.exited() || status.code() != 0 || absl::StrContains(output, "Sanitizer")) {
    std::cerr << "clickd (pid " << pid_ << ", " << address_ << ") ended with " << status.ToString()
              << "; its output:\n"
              << output << std::endl;
  }
  std::remove(log_path_.c_str());
}

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel() const {
  return NewChannel(credentials_ != nullptr ? credentials_ : grpc::InsecureChannelCredentials());
}

std::shared_ptr<grpc::Channel> ServerProcess::NewChannel(
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) const {
  // A channel argument that no other channel has, so that each channel
  // gets its own connection rather than sharing a global subchannel.
  static std::atomic<int> next_channel{0};
  grpc::ChannelArguments args;
  args.SetInt("clickd.test.channel", next_channel.fetch_add(1));
  return grpc::CreateCustomChannel(address_, credentials, args);
}

std::unique_ptr<v1::Clickd::Stub> ServerProcess::NewStub() const {
  return v1::Clickd::NewStub(NewChannel());
}

void ServerProcess::Signal(int signal) {
  if (!Poll()) kill(pid_, signal);
}

bool ServerProcess::Poll() {
  if (!exit_.has_value()) exit_ = Reap(pid_);
  return exit_.has_value();
}

std::optional<ExitStatus> ServerProcess::WaitForExit(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!Poll() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  return exit_;
}

ExitStatus ServerProcess::Stop(milliseconds grace) {
  if (!Poll()) {
    kill(pid_, SIGTERM);
    exit_ = WaitOrKill(pid_, grace);
  }
  return *exit_;
}

std::string ServerProcess::Output() const { return ReadFile(log_path_); }

RunResult RunClickd(const std::vector<std::string>& flags, milliseconds timeout) {
  RunResult result;
  auto log_path = MakeLogFile();
  auto port = FindFreePort();
  if (!log_path.ok() || !port.ok()) {
    result.status.wait_status = 127 << 8;
    result.output = absl::StrCat(log_path.status().ToString(), port.status().ToString());
    return result;
  }
  // An address of our own, in case the flags let the server start.
  std::vector<std::string> args = {absl::StrCat("--address=127.0.0.1:", *port), "--metrics_port=0"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto pid = Spawn(DefaultBinary(), args, *log_path);
  if (!pid.ok()) {
    result.status.wait_status = 127 << 8;
    result.output = pid.status().ToString();
  } else {
    result.status = WaitOrKill(*pid, timeout);
    result.output = ReadFile(*log_path);
  }
  std::remove(log_path->c_str());
  return result;
}

}  // namespace clickd::testing
