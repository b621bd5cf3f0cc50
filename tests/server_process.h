// ServerProcess: runs the real clickd binary for a test, on a free port of
// 127.0.0.1, and stops it by PID.
//
//   ServerOptions options;
//   options.flags = {"--max_candidates=5"};
//   auto server = ServerProcess::Start(options);
//   ASSERT_TRUE(server.ok()) << server.status();
//   auto stub = (*server)->NewStub();
//   ...
//   EXPECT_EQ((*server)->Stop().ToString(), "exit 0");
//
// Start() returns once the server is ready: it has printed its "serving"
// line (which it does right after setting its health status) and answers
// grpc.health.v1.Health/Check. The server's stdout and stderr go to a
// temporary file (Output()); the destructor stops a server still running
// and echoes that file to stderr when the server ended abnormally or a
// sanitizer reported something, so that failures are diagnosable.
//
// The server gets SIGKILL if the thread that started it exits (so a crashed
// test leaves no server behind): start servers from a thread that outlives
// them, such as the test's own.
//
// A graceful stop waits for clients to close their connections, and an idle
// gRPC C++ channel notices the server's GOAWAY only at its backup poll (5 s
// by default): destroy channels before Stop(), or set
// GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS in the test process.
//
// Thread safety: externally synchronized, except that address(), pid(),
// NewChannel() and NewStub() may be called from any thread.
#ifndef CLICKD_TESTS_SERVER_PROCESS_H_
#define CLICKD_TESTS_SERVER_PROCESS_H_

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.grpc.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "tests/child_process.h"

namespace clickd::testing {

struct ServerOptions {
  // Flags after --address and --metrics_port=0 (no /metrics endpoint unless
  // a flag here sets a port), e.g. {"--config=/tmp/models.json"}.
  std::vector<std::string> flags;
  // The clickd binary; empty means the one this build made.
  std::string binary;
  // How long the server may take to become ready.
  std::chrono::milliseconds ready_timeout{20'000};
  // How many ports to try when another process takes ours between finding
  // it free and the server binding it. (gRPC binds with SO_REUSEPORT, so
  // another clickd that took the port goes unnoticed: see the disabled
  // ClickdStartup test.)
  int port_attempts = 5;
  // How NewChannel() and the readiness check connect (null: plaintext), for
  // a server started with TLS flags.
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
};

class ServerProcess {
 public:
  // Starts clickd and waits until it is ready. Fails with the server's
  // output if it exits first or is not ready within the timeout.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(ServerOptions options = {});

  // Stops the server if it is still running.
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // "127.0.0.1:PORT".
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }

  // A new channel (its own connection) to the server, with the options'
  // channel_credentials or with `credentials`.
  std::shared_ptr<grpc::Channel> NewChannel() const;
  std::shared_ptr<grpc::Channel> NewChannel(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials) const;
  std::unique_ptr<v1::Clickd::Stub> NewStub() const;

  // Sends `signal` to the server's PID (if it is still running).
  void Signal(int signal);

  // Waits up to `timeout` for the server to exit by itself; nullopt if it is
  // still running then.
  std::optional<ExitStatus> WaitForExit(std::chrono::milliseconds timeout);

  // Sends SIGTERM and waits up to `grace` for the server to exit, then
  // SIGKILLs it. Returns how it ended; later calls return the same.
  ExitStatus Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(20'000));

  bool running() const { return !exit_.has_value(); }

  // Everything the server has written to stdout and stderr.
  std::string Output() const;

 private:
  ServerProcess(pid_t pid, std::string address, std::string log_path,
                std::shared_ptr<grpc::ChannelCredentials> credentials)
      : pid_(pid),
        address_(std::move(address)),
        log_path_(std::move(log_path)),
        credentials_(std::move(credentials)) {}

  // Reaps the child if it has exited; true if it has.
  bool Poll();

  const pid_t pid_;
  const std::string address_;
  const std::string log_path_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::optional<ExitStatus> exit_;
};

// Runs clickd with `flags` until it exits by itself (for startup failures,
// --help and the like), killing it after `timeout`. The flags follow an
// --address on a free port of 127.0.0.1 and --metrics_port=0, so a server
// that does start stays private; an --address in `flags` wins.
struct RunResult {
  ExitStatus status;
  std::string output;  // stdout and stderr
};
RunResult RunClickd(const std::vector<std::string>& flags,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(20'000));

// Calls grpc.health.v1.Health/Check for `service` ("" is the whole server).
absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service = "",
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5'000));

// A port of 127.0.0.1 that was free a moment ago (bound to port 0, then
// closed): the caller must cope with losing a race for it.
absl::StatusOr<int> FindFreePort();

}  // namespace clickd::testing

#endif  // CLICKD_TESTS_SERVER_PROCESS_H_
