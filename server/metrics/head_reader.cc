#include "server/metrics/head_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace clickd::metrics {
namespace {

using Clock = std::chrono::steady_clock;

// How long a refused connection is drained after its reply.
constexpr auto kLinger = std::chrono::seconds(1);
// Connections accepted per wake-up, so that a flood of connects cannot
// starve the reading of heads already under way.
constexpr int kAcceptsPerRound = 64;

}  // namespace

struct HeadReader::Connection {
  int fd = -1;  // -1: closed, to be dropped
  std::string bytes;
  Clock::time_point deadline;
  bool lingering = false;  // refused: drained until EOF or the deadline
};

HeadReader::HeadReader(int listen_fd, HeadLimits limits, Ready ready)
    : listen_fd_(listen_fd), limits_(limits), ready_(std::move(ready)) {}

HeadReader::~HeadReader() { Stop(); }

bool HeadReader::Start() {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void HeadReader::Stop() {
  if (!thread_.joinable()) return;
  const char byte = 0;
  (void)!write(wake_[1], &byte, 1);
  thread_.join();
  close(wake_[0]);
  close(wake_[1]);
  close(listen_fd_);
}

void HeadReader::Close(Connection* c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  std::string().swap(c->bytes);
}

void HeadReader::Refuse(Connection* c, std::string_view status, Clock::time_point now) {
  const std::string reply = absl::StrCat("HTTP/1.1 ", std::string(status),
                                         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  (void)send(c->fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(c->fd, SHUT_WR);
  std::string().swap(c->bytes);
  c->lingering = true;
  c->deadline = now + kLinger;
}

namespace {

// Where the head in `bytes` ends (after its blank line), or npos.
size_t HeadEnd(std::string_view bytes) {
  const size_t crlf = bytes.find("\r\n\r\n");
  const size_t lf = bytes.find("\n\n");
  size_t end = std::string_view::npos;
  if (crlf != std::string_view::npos) end = crlf + 4;
  if (lf != std::string_view::npos) end = std::min(end, lf + 2);
  return end;
}

}  // namespace

void HeadReader::Loop() {
  std::vector<Connection> connections;  // in accept order: the oldest first
  std::vector<pollfd> polled;
  for (;;) {
    const Clock::time_point now = Clock::now();
    polled.clear();
    polled.push_back({wake_[0], POLLIN, 0});
    polled.push_back({listen_fd_, POLLIN, 0});
    Clock::time_point next = now + std::chrono::seconds(60);
    for (const Connection& c : connections) {
      polled.push_back({c.fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    const int n = poll(polled.data(), polled.size(), static_cast<int>(std::max<int64_t>(0, wait)));
    if (n < 0 && errno != EINTR) break;
    if (polled[0].revents != 0) break;  // Stop
    const Clock::time_point after = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      if (polled[i + 2].revents != 0) Read(&c, after);
      if (c.fd >= 0 && after >= c.deadline) {
        if (c.lingering) {
          Close(&c);
        } else {
          Refuse(&c, "408 Request Timeout", after);
        }
      }
    }
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return c.fd < 0; }),
                      connections.end());
    if (polled[1].revents == 0) continue;
    for (int i = 0; i < kAcceptsPerRound; ++i) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;  // none left (or out of descriptors: retried next round)
      if (connections.size() >= limits_.max_connections) {
        Close(&connections.front());
        connections.erase(connections.begin());
      }
      connections.push_back({fd, std::string(), after + limits_.head_timeout, false});
    }
  }
  for (Connection& c : connections) Close(&c);
}

void HeadReader::Read(Connection* c, Clock::time_point now) {
  if (c->lingering) {
    char discard[16 << 10];
    for (int i = 0; i < 4; ++i) {
      const ssize_t got = recv(c->fd, discard, sizeof(discard), 0);
      if (got > 0) continue;
      if (got == 0 || (errno != EAGAIN && errno != EINTR)) Close(c);
      return;
    }
    return;
  }
  // At most one byte past the bound, so that breaking it is seen.
  const size_t room = limits_.max_head_bytes + 1 - c->bytes.size();
  const size_t old_size = c->bytes.size();
  c->bytes.resize(old_size + room);
  const ssize_t got = recv(c->fd, c->bytes.data() + old_size, room, 0);
  c->bytes.resize(old_size + std::max<ssize_t>(got, 0));
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
    Close(c);
    return;
  }
  const size_t end = HeadEnd(c->bytes);
  const std::string_view head =
      std::string_view(c->bytes).substr(0, std::min(end, c->bytes.size()));
  // Lines ended so far, less the request line and the blank line.
  const int64_t lines = std::count(head.begin(), head.end(), '\n');
  const int64_t header_lines = lines - 1 - (end == std::string::npos ? 0 : 1);
  if (header_lines > limits_.max_header_lines ||
      (end == std::string::npos && c->bytes.size() > limits_.max_head_bytes)) {
    Refuse(c, "431 Request Header Fields Too Large", now);
    return;
  }
  if (end == std::string::npos) return;
  const std::string refusal = ready_(c->fd, std::move(c->bytes));
  if (refusal.empty()) {
    c->fd = -1;  // handed on
    std::string().swap(c->bytes);
    return;
  }
  Refuse(c, refusal, now);
}

}  // namespace clickd::metrics
