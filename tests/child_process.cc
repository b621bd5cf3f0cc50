#include "tests/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace testing {

bool ExitStatus::exited() const { return WIFEXITED(wait_status); }
int ExitStatus::code() const { return exited() ? WEXITSTATUS(wait_status) : -1; }
int ExitStatus::signal() const { return WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0; }

std::string ExitStatus::ToString() const {
  if (exited()) return absl::StrCat("exit ", code());
  if (WIFSIGNALED(wait_status)) return absl::StrCat("signal ", signal());
  return absl::StrCat("wait status ", wait_status);
}

absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv_strings,
                            const SpawnOptions& options) {
  if (argv_strings.empty()) return absl::InvalidArgumentError("Spawn: empty argv");
  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are allowed.
  std::vector<std::string> args = argv_strings;
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | (options.append ? O_APPEND : O_TRUNC);
  const std::string& out_path = options.stdout_path;
  const std::string& err_path =
      options.stderr_path.empty() ? options.stdout_path : options.stderr_path;
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (options.own_process_group) setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), flags, 0644);
    const int err = err_path == out_path ? out : open(err_path.c_str(), flags, 0644);
    if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
      _exit(127);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (options.own_process_group) setpgid(pid, pid);  // either side may run first
  return pid;
}

std::optional<ExitStatus> Reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) return ExitStatus{status};
  return std::nullopt;
}

ExitStatus WaitOrKill(pid_t pid, std::chrono::milliseconds timeout, bool group) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<ExitStatus> status;
  while (!(status = Reap(pid)).has_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // A group leader that exited may have left children behind.
  if (group) kill(-pid, SIGKILL);
  if (status.has_value()) return *status;
  kill(pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  return ExitStatus{wait_status};
}

}  // namespace testing
}  // namespace clickd
