// StatusPage: the human-readable status page on the metrics port. GET /
// answers a small self-contained HTML page (status_html.h) that polls GET
// /status.json (status_json.h) every 2 s, shows the server's load beside
// its limits and draws every model's progressive logloss, AUC and
// calibration over time.
//
// So that a fresh page load already shows curves, the page keeps a ring of
// recent points per model on the server: a sampler thread takes one point
// per model every sample interval. Memory is bounded: at most max_points
// points (StatusPoint, 72 bytes) per model, 300 by default, i.e. the last
// 10 minutes at 2 s, about 21 KB per model (5.4 MB for the default limit
// of 256 models); a deleted model's history goes at the next sample.
// /status.json?since=T returns only points newer than T, so that a polling
// page fetches each point once.
//
//   StatusPage status(&registry);
//   status.StartSampling();
//   auto exporter = HttpExporter::Start(address, port, &metrics, status.Pages());
//
// Thread safety: safe for concurrent access, except that StartSampling,
// StopSampling and the destructor are externally synchronized. The
// registry must outlive the page, and the page every server of its Pages().
#ifndef CLICKD_SERVER_STATUS_STATUS_PAGE_H_
#define CLICKD_SERVER_STATUS_STATUS_PAGE_H_

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "server/metrics/http_exporter.h"
#include "server/status/status_json.h"

namespace clickd::status {

// Seconds since the Unix epoch (tests inject a fake).
using UnixClock = std::function<double()>;
double UnixNow();

struct StatusPageOptions {
  std::chrono::milliseconds sample_interval{2000};
  // Points kept per model.
  int max_points = 300;
};

class StatusPage {
 public:
  explicit StatusPage(const ModelRegistry* models, StatusPageOptions options = {},
                      UnixClock clock = UnixNow);
  ~StatusPage();
  StatusPage(const StatusPage&) = delete;
  StatusPage& operator=(const StatusPage&) = delete;

  // Starts a thread that calls Sample() now and every sample interval.
  void StartSampling();
  // Stops that thread. Idempotent.
  void StopSampling();

  // Takes one point of every model now, and forgets deleted models.
  void Sample();

  // How Report reads the server's load; until set, the report has none.
  // Set once the executor and the services exist, which is after the page
  // is served; whatever `read` reads must outlive every Report.
  void SetLoadReader(ServerLoadReader read);
  // How Report reads the models' Kafka sources (by model name); until set,
  // none. Whatever `read` reads must outlive every Report.
  using KafkaReader = std::function<std::vector<std::pair<std::string, KafkaStatus>>()>;
  void SetKafkaReader(KafkaReader read);

  // Every model as it is now, with its points newer than `since` (unix
  // seconds; 0: all it has kept).
  StatusReport Report(double since = 0) const;

  // "/" (the HTML) and "/status.json" (Report(since) as JSON; 400 for a
  // since that is not a number).
  std::vector<metrics::HttpPage> Pages() const;

 private:
  struct History {
    // Which model the points are of: a model deleted and created again
    // under its name starts a new history.
    std::weak_ptr<const ServedModel> model;
    std::deque<StatusPoint> points;
  };

  StatusPoint PointOf(const ServedModel& model, double now) const;
  void RunSampler();

  const ModelRegistry* const models_;
  const StatusPageOptions options_;
  const UnixClock clock_;
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, History> histories_ ABSL_GUARDED_BY(mu_);
  ServerLoadReader read_load_ ABSL_GUARDED_BY(mu_);
  KafkaReader read_kafka_ ABSL_GUARDED_BY(mu_);
  Mutex sampler_mu_;
  CondVar sampler_cv_;
  bool stopping_ ABSL_GUARDED_BY(sampler_mu_) = false;
  std::thread sampler_;
};

}  // namespace clickd::status

#endif  // CLICKD_SERVER_STATUS_STATUS_PAGE_H_
