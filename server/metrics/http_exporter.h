// HttpExporter: serves a Collectable (the metrics Registry) over HTTP for
// Prometheus to scrape: GET /metrics answers the text exposition format
// (prometheus-cpp's TextSerializer). Other pages may be served beside it (HttpPage: the
// status page, server/status/status_page.h); any other path is 404. Built
// on cpp-httplib, with a small thread pool of its own: scrapes never run on
// gRPC's threads, and a slow scraper cannot hold up a request.
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

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/metrics/registry.h"

namespace httplib {
class Server;
}  // namespace httplib

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
  // Threads that answer scrapes. Prometheus scrapes one target serially;
  // the rest are for connections that hold a thread without a request (an
  // idle keep-alive connection, or one that never sends): cpp-httplib
  // serves a connection per thread, so with a pool of 2 two idle
  // connections blocked every scrape for the keep-alive timeout.
  // Started as connections need them (not all at once) and kept; 200
  // connections that send nothing leave a scrape a thread of its own. Each
  // costs a stack (8 MiB virtual, tens of KB resident).
  static constexpr int kThreads = 256;
  // How long a connection may sit without a (complete) request before it
  // gives up its thread. Prometheus does not reuse a connection across
  // scrapes seconds apart, so keep-alive longer than this buys nothing.
  static constexpr int kIdleSeconds = 2;
  // The pages take no request body: a longer one is refused (413) before it
  // is read, where httplib would otherwise buffer any body whole (a 1.4 GB
  // POST: issue 33, N11).
  static constexpr size_t kMaxBodyBytes = 4096;

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
  HttpExporter(std::unique_ptr<httplib::Server> server, int port);

  std::unique_ptr<httplib::Server> server_;
  const int port_;
  std::thread listener_;
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_HTTP_EXPORTER_H_
