// HttpExporter: serves a Collectable (the metrics Registry) over HTTP for
// Prometheus to scrape: GET /metrics answers the text exposition format
// (prometheus-cpp's TextSerializer). Other pages may be served beside it (HttpPage: the
// status page, server/status/status_page.h); any other path is 404.
//
// Connections are accepted, and their request heads read within bounds
// (HeadReader: bytes, lines, time), on one thread with poll; a complete
// request then runs on a small pool of threads of the exporter's own
// (cpp-httplib parses and routes it), one request per connection. So
// scrapes never run on gRPC's threads, and connections that send nothing
// or trickle their headers hold no thread (issue 33, N11).
//
//   auto exporter = HttpExporter::Start("127.0.0.1", 9464, &registry);
//   ...
//   (*exporter)->Stop();  // or let the destructor do it
//
// Thread safety: Start, Stop and the destructor are externally synchronized;
// port() may be called from any thread. The Collectable must outlive the
// exporter, and so must whatever the pages' handlers use.
#ifndef CLICKD_SERVER_METRICS_HTTP_EXPORTER_H_
#define CLICKD_SERVER_METRICS_HTTP_EXPORTER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/metrics/head_reader.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {

// What a page's handler answers.
struct HttpReply {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// The Content-Type of SerializeText's output.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// The text exposition format (0.0.4) of `families`: prometheus-cpp's
// TextSerializer.
std::string SerializeText(const std::vector<MetricFamily>& families);

// A page served beside /metrics: GET `path` answers handler(query), the
// query string's parameters (the last value of a repeated one). Handlers run
// on the exporter's threads, several at a time.
struct HttpPage {
  std::string path;
  std::function<HttpReply(const std::map<std::string, std::string>& query)> handler;
};

class HttpExporter {
 public:
  // Threads that answer complete requests (started as needed, kept).
  // Each request has kRequestSeconds in all, so a client that reads its
  // answer slowly holds one for that long at most.
  static constexpr int kThreads = 32;
  // Requests waiting for a thread or answered; beyond it a complete
  // request is refused with 503 at once.
  static constexpr int kMaxRequests = 256;
  // From a complete head to the last byte of the answer.
  static constexpr int kRequestSeconds = 10;
  // How long a read or write may wait for the socket during a request.
  static constexpr int kIdleSeconds = 2;
  // The pages take no request body: a longer one is refused (413) before it
  // is read, where httplib would otherwise buffer any body whole (a 1.4 GB
  // POST: issue 33, N11).
  static constexpr size_t kMaxBodyBytes = 4096;
  // A request head (request line and headers) larger than this, or with
  // more header lines, is refused with 431 (100,000 header lines held
  // 793 MB: issue 33, N11); one not complete within kHeadSeconds of the
  // connect gets 408 (a slowloris trickling a byte a second held a thread
  // for ever). Prometheus sends about 300 bytes in 6 lines at once.
  static constexpr size_t kMaxHeadBytes = 16 << 10;
  static constexpr int kMaxHeaderLines = 100;
  static constexpr int kHeadSeconds = 5;
  // Connections still sending their head; beyond it the oldest is closed.
  static constexpr size_t kMaxConnections = 1024;

  // Binds `address`:`port` (port 0: any free port; see port()) and serves
  // `collectable` at /metrics, and `pages`, there until Stop. Unavailable if
  // the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> Start(const std::string& address, int port,
                                                             const Collectable* collectable,
                                                             std::vector<HttpPage> pages = {});

  ~HttpExporter();
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // The port it listens on.
  int port() const { return port_; }

  // Stops listening and waits for scrapes in progress to finish. Idempotent.
  void Stop();

 private:
  class ConnectionServer;
  class GrowingThreadPool;
  HttpExporter(std::unique_ptr<ConnectionServer> server, int port);

  std::unique_ptr<ConnectionServer> server_;
  const int port_;
  std::unique_ptr<GrowingThreadPool> pool_;
  std::unique_ptr<HeadReader> reader_;
  std::atomic<int> requests_{0};  // handed on, not yet answered
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_HTTP_EXPORTER_H_
