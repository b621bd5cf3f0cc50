#include "server/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"

namespace clickd::metrics {
namespace {

// httplib matches paths as regular expressions: escapes the pattern's
// special characters, so that a page's path matches only itself.
std::string LiteralPattern(const std::string& path) {
  std::string pattern;
  for (char c : path) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  return pattern;
}

// A request's connection as cpp-httplib reads and writes it: first the
// bytes HeadReader read (the head), then the socket (non-blocking), each
// wait bounded by kIdleSeconds and the whole request by its deadline.
class ReadAheadStream final : public httplib::Stream {
 public:
  ReadAheadStream(int fd, std::string read_ahead, std::chrono::steady_clock::time_point deadline)
      : fd_(fd), read_ahead_(std::move(read_ahead)), deadline_(deadline) {}

  bool is_readable() const override { return offset_ < read_ahead_.size() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (offset_ < read_ahead_.size()) {
      const size_t n = std::min(size, read_ahead_.size() - offset_);
      std::memcpy(ptr, read_ahead_.data() + offset_, n);
      offset_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      if (!Wait(POLLIN)) return -1;
      const ssize_t n = recv(fd_, ptr, size, 0);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      if (!Wait(POLLOUT)) return -1;
      const ssize_t n = send(fd_, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(&getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(&getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Waits for `events` for kIdleSeconds at most, and not past the deadline.
  bool Wait(short events) const {
    const auto now = std::chrono::steady_clock::now();
    const auto left = std::min<std::chrono::steady_clock::duration>(
        deadline_ - now, std::chrono::seconds(HttpExporter::kIdleSeconds));
    if (left <= left.zero()) return false;
    pollfd p{fd_, events, 0};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    int n;
    do {
      n = poll(&p, 1, static_cast<int>(ms));
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      port = ntohs(in->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
      port = ntohs(in->sin6_port);
    }
    ip = text;
  }

  const int fd_;
  const std::string read_ahead_;
  size_t offset_ = 0;
  const std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

// cpp-httplib's server, used to bind the port and to parse, route and
// answer one request on a connection HeadReader hands on (its own accept
// loop, listen_after_bind, is never run).
class HttpExporter::ConnectionServer final : public httplib::Server {
 public:
  // The socket bind_to_port made; HeadReader closes it at Stop.
  int listening_socket() const { return svr_sock_; }
  void forget_listening_socket() { svr_sock_ = INVALID_SOCKET; }

  // Answers the request whose first bytes are `read_ahead` on `fd`, then
  // closes it.
  void Serve(int fd, std::string read_ahead) {
    ReadAheadStream stream(
        fd, std::move(read_ahead),
        std::chrono::steady_clock::now() + std::chrono::seconds(kRequestSeconds));
    bool closed = false;
    process_request(stream, /*close_connection=*/true, closed, nullptr);
    shutdown(fd, SHUT_WR);
    close(fd);
  }
};

// The threads that answer complete requests: started as requests need
// them, up to `max_threads`, and kept for the next ones.
class HttpExporter::GrowingThreadPool {
 public:
  explicit GrowingThreadPool(size_t max_threads) : max_threads_(max_threads) {}
  ~GrowingThreadPool() { Shutdown(); }

  void Enqueue(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
    if (idle_ == 0 && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { Work(); });
    }
    cv_.Signal();
  }

  // Runs the queued tasks, then joins the threads.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    cv_.SignalAll();
    for (std::thread& thread : threads) thread.join();
  }

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_) {
    for (;;) {
      std::function<void()> task;
      {
        MutexLock lock(&mu_);
        while (tasks_.empty() && !stopping_) {
          ++idle_;
          cv_.Wait(&mu_);
          --idle_;
        }
        if (tasks_.empty()) return;  // stopping
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  const size_t max_threads_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

std::string SerializeText(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const std::string& address,
                                                                  int port,
                                                                  const Collectable* collectable,
                                                                  std::vector<HttpPage> pages) {
  auto server = std::make_unique<ConnectionServer>();
  // httplib's default sets SO_REUSEPORT, with which a second clickd on a
  // busy port would bind it too and take half of the scrapes. SO_REUSEADDR
  // alone still allows a restart while old connections are in TIME_WAIT.
  server->set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->set_payload_max_length(kMaxBodyBytes);
  server->Get("/metrics", [collectable](const httplib::Request&, httplib::Response& response) {
    response.set_content(SerializeText(collectable->Collect()), kTextContentType);
  });
  for (HttpPage& page : pages) {
    server->Get(LiteralPattern(page.path),
                [handler = std::move(page.handler)](const httplib::Request& request,
                                                    httplib::Response& response) {
                  std::map<std::string, std::string> query;
                  for (const auto& [key, value] : request.params) query[key] = value;
                  HttpReply reply = handler(query);
                  response.status = reply.status;
                  for (const auto& [name, value] : reply.headers) response.set_header(name, value);
                  response.set_content(reply.body, reply.content_type);
                });
  }
  int bound = port;
  if (port == 0) {
    bound = server->bind_to_any_port(address);
  } else if (!server->bind_to_port(address, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ":", port, " for /metrics"));
  }
  const int listening = server->listening_socket();
  // httplib listens with a backlog of 5: a burst of connections beyond it
  // has the kernel drop handshakes (retried after 1 s and more), scrapes'
  // included. A second listen() on the socket only raises the backlog.
  ::listen(listening, SOMAXCONN);
  fcntl(listening, F_SETFL, fcntl(listening, F_GETFL) | O_NONBLOCK);
  std::unique_ptr<HttpExporter> exporter(new HttpExporter(std::move(server), bound));
  exporter->pool_ = std::make_unique<GrowingThreadPool>(kThreads);
  HeadLimits limits;
  limits.max_head_bytes = kMaxHeadBytes;
  limits.max_header_lines = kMaxHeaderLines;
  limits.head_timeout = std::chrono::seconds(kHeadSeconds);
  limits.max_connections = kMaxConnections;
  HttpExporter* raw = exporter.get();
  exporter->reader_ = std::make_unique<HeadReader>(
      listening, limits, [raw](int fd, std::string bytes) -> std::string {
        if (raw->requests_.fetch_add(1) >= kMaxRequests) {
          raw->requests_.fetch_sub(1);
          return "503 Service Unavailable";
        }
        raw->pool_->Enqueue([raw, fd, bytes = std::move(bytes)]() mutable {
          raw->server_->Serve(fd, std::move(bytes));
          raw->requests_.fetch_sub(1);
        });
        return "";
      });
  if (!exporter->reader_->Start()) {
    return absl::InternalError(absl::StrCat("cannot start the /metrics listener: errno ", errno));
  }
  return exporter;
}

HttpExporter::HttpExporter(std::unique_ptr<ConnectionServer> server, int port)
    : server_(std::move(server)), port_(port) {}

HttpExporter::~HttpExporter() { Stop(); }

void HttpExporter::Stop() {
  if (reader_ == nullptr) return;
  // No new requests, then the ones handed on are answered.
  reader_->Stop();
  server_->forget_listening_socket();
  pool_->Shutdown();
  reader_.reset();
}

}  // namespace clickd::metrics
