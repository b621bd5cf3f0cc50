#include "server/descriptors.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace clickd {
namespace {

// At most this many waiting connections are shed per failed accept: the
// kernel's backlog (net.core.somaxconn) is at most 4096 by default.
constexpr int kMaxShedPerAccept = 4096;
// At most one warning on stderr per this period while connections are shed.
constexpr int64_t kWarnPeriodNanos = int64_t{10'000'000'000};

ABSL_CONST_INIT absl::Mutex reserve_mutex(absl::kConstInit);
// A descriptor on /dev/null, closed for the time it takes to accept and
// close one connection when the process has no other free descriptor; -1
// while another thread took it (then reopened at the next shedding).
int reserve_fd ABSL_GUARDED_BY(reserve_mutex) = -1;
std::atomic<uint64_t> shed_total{0};
std::atomic<int64_t> last_warning_nanos{0};

int KernelAccept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  return static_cast<int>(syscall(SYS_accept4, fd, address, length, flags));
}

// True if `listener` has a connection waiting (without blocking, whether
// the listener blocks or not).
bool HasWaitingConnection(int listener) {
  pollfd entry{listener, POLLIN, 0};
  return poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN) != 0;
}

void OpenReserve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reserve_mutex) {
  if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// Accepts and closes the connections waiting on `listener`, one through
// the reserved descriptor at a time. Returns how many.
int ShedWaitingConnections(int listener) {
  absl::MutexLock lock(&reserve_mutex);
  OpenReserve();
  int shed = 0;
  for (int i = 0; i < kMaxShedPerAccept && reserve_fd >= 0 && HasWaitingConnection(listener); ++i) {
    close(reserve_fd);
    reserve_fd = -1;
    const int connection = KernelAccept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection >= 0) {
      close(connection);
      ++shed;
    }
    OpenReserve();
    if (connection < 0) break;
  }
  return shed;
}

// Says on stderr, at most once per kWarnPeriodNanos, that connections are
// being shed.
void WarnShedding(int error) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_warning_nanos.load(std::memory_order_relaxed);
  if (last != 0 && now - last < kWarnPeriodNanos) return;
  if (!last_warning_nanos.compare_exchange_strong(last, now)) return;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const std::string message = absl::StrCat(
      "clickd: WARNING: accept: ", std::strerror(error), " (RLIMIT_NOFILE ", limit.rlim_cur, "); ",
      shed_total.load(), " new connection(s) closed at once since start (docs/limits.md)\n");
  const ssize_t written = write(STDERR_FILENO, message.data(), message.size());
  (void)written;
}

uint64_t NrOpen() {
  std::ifstream file("/proc/sys/fs/nr_open");
  uint64_t value = 0;
  if (file >> value && value > 0) return value;
  return uint64_t{1} << 20;
}

}  // namespace

absl::StatusOr<uint64_t> PrepareDescriptors() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return absl::InternalError(absl::StrCat("getrlimit(RLIMIT_NOFILE): ", std::strerror(errno)));
  }
  const rlim_t target = limit.rlim_max == RLIM_INFINITY ? NrOpen() : limit.rlim_max;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur < target) {
    limit.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      return absl::InternalError(
          absl::StrCat("setrlimit(RLIMIT_NOFILE, ", target, "): ", std::strerror(errno)));
    }
  }
  {
    absl::MutexLock lock(&reserve_mutex);
    OpenReserve();
    if (reserve_fd < 0) {
      return absl::InternalError(absl::StrCat("open(/dev/null): ", std::strerror(errno)));
    }
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

uint64_t ConnectionsShed() { return shed_total.load(); }

}  // namespace clickd

// Replaces the C library's accept4 for the whole process (gRPC's listeners
// call it): out of descriptors, the waiting connections are shed and the
// caller sees EAGAIN, which keeps gRPC's listener armed (descriptors.h).
extern "C" int accept4(int fd, sockaddr* address, socklen_t* length, int flags) {
  const int accepted = clickd::KernelAccept4(fd, address, length, flags);
  if (accepted >= 0 || (errno != EMFILE && errno != ENFILE)) return accepted;
  const int error = errno;
  clickd::shed_total.fetch_add(static_cast<uint64_t>(clickd::ShedWaitingConnections(fd)));
  clickd::WarnShedding(error);
  errno = EAGAIN;
  return -1;
}
