#include "server/metrics/http_exporter.h"

#include <httplib.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>

#include <chrono>
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

// httplib's task queue for the metrics port: a connection per thread, as
// httplib serves them, but threads started as connections need them, up
// to `max_threads`, and kept for the next ones. httplib's own ThreadPool
// has a fixed size, so a few idle connections (each holding its thread
// for the read timeout) made every scrape wait behind them: 200 took a
// scrape to 20.8 s with 16 threads (issue 33, N11).
class GrowingThreadPool final : public httplib::TaskQueue {
 public:
  explicit GrowingThreadPool(size_t max_threads) : max_threads_(max_threads) {}
  ~GrowingThreadPool() override { shutdown(); }

  void enqueue(std::function<void()> task) override ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
    if (idle_ == 0 && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { Work(); });
    }
    cv_.Signal();
  }

  // Runs the queued tasks, then joins the threads.
  void shutdown() override ABSL_LOCKS_EXCLUDED(mu_) {
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

}  // namespace

std::string SerializeText(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const std::string& address,
                                                                  int port,
                                                                  const Collectable* collectable,
                                                                  std::vector<HttpPage> pages) {
  auto server = std::make_unique<httplib::Server>();
  server->new_task_queue = [] { return new GrowingThreadPool(kThreads); };
  // httplib's default sets SO_REUSEPORT, with which a second clickd on a
  // busy port would bind it too and take half of the scrapes. SO_REUSEADDR
  // alone still allows a restart while old connections are in TIME_WAIT.
  auto listening = std::make_shared<socket_t>(INVALID_SOCKET);
  server->set_socket_options([listening](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    *listening = sock;
  });
  // A connection that stalls or idles gives up its thread after these.
  server->set_read_timeout(std::chrono::seconds(kIdleSeconds));
  server->set_write_timeout(std::chrono::seconds(5));
  server->set_keep_alive_timeout(kIdleSeconds);
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
  // httplib listens with a backlog of 5: a burst of connections beyond it
  // has the kernel drop handshakes (retried after 1 s and more), scrapes'
  // included. A second listen() on the socket only raises the backlog.
  if (*listening != INVALID_SOCKET) ::listen(*listening, SOMAXCONN);
  std::unique_ptr<HttpExporter> exporter(new HttpExporter(std::move(server), bound));
  httplib::Server* s = exporter->server_.get();
  exporter->listener_ = std::thread([s] { s->listen_after_bind(); });
  // httplib's stop() does nothing until the listener has marked itself
  // running, so a Stop() right after Start() would wait forever: wait for
  // the mark (the listener sets it first thing).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!s->is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!s->is_running()) {
    // Neither stoppable nor joinable: leave the thread and its server be.
    exporter->listener_.detach();
    exporter->server_.release();
    return absl::InternalError("the /metrics listener did not start within 10 s");
  }
  return exporter;
}

HttpExporter::HttpExporter(std::unique_ptr<httplib::Server> server, int port)
    : server_(std::move(server)), port_(port) {}

HttpExporter::~HttpExporter() { Stop(); }

void HttpExporter::Stop() {
  if (!listener_.joinable()) return;
  // stop() closes the listening socket; listen_after_bind then returns
  // after its thread pool has finished the requests it holds.
  server_->stop();
  listener_.join();
}

}  // namespace clickd::metrics
