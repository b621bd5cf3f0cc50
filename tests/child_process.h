// Child processes of the tests (clickd, nats-server, clickctl through a
// shell): started with fork + exec, reaped, and killed when a test is done
// with them or dies. The one process runner of tests/: ServerProcess
// (tests/server_process.h), NatsCluster (tests/nats_cluster.h) and
// RunCommand (tests/test_util.h) are built on it.
#ifndef CLICKD_TESTS_CHILD_PROCESS_H_
#define CLICKD_TESTS_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace clickd {
namespace testing {

// How a child process ended, from its wait status.
struct ExitStatus {
  int wait_status = 0;

  bool exited() const;
  int code() const;    // the exit code, or -1 if a signal ended it
  int signal() const;  // the terminating signal, or 0
  // "exit 0", "exit 2", "signal 9".
  std::string ToString() const;
};

struct SpawnOptions {
  // stdout goes here (created if missing), and stderr too unless
  // stderr_path is set. stdin is /dev/null.
  std::string stdout_path;
  std::string stderr_path;
  // Append to the files instead of truncating them.
  bool append = false;
  // The child leads a process group of its own, so that KillGroup reaches
  // what it starts (a shell's children).
  bool own_process_group = false;
};

// Starts argv[0] (a path) with argv. The child gets SIGKILL if the thread
// that started it dies, so a crashed test leaves nothing running.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

// Reaps `pid` if it has exited; nullopt while it runs.
std::optional<ExitStatus> Reap(pid_t pid);

// Waits up to `timeout` for `pid` to exit, then SIGKILLs it (its whole
// process group if `group`) and reaps it.
ExitStatus WaitOrKill(pid_t pid, std::chrono::milliseconds timeout, bool group = false);

}  // namespace testing
}  // namespace clickd

#endif  // CLICKD_TESTS_CHILD_PROCESS_H_
