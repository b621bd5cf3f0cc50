#include "server/status/status_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "server/status/status_html.h"

namespace clickd::status {
namespace {

// Per second between two points; NaN without two points in time order.
double Rate(uint64_t before, uint64_t after, double seconds) {
  if (!(seconds > 0) || after < before) return MetricsSummary::kNaN;
  return static_cast<double>(after - before) / seconds;
}

metrics::HttpReply Html() {
  metrics::HttpReply reply;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = std::string(kStatusPageHtml);
  // The page needs nothing but itself and /status.json.
  reply.headers = {{"Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                    "connect-src 'self'; img-src data:"},
                   {"X-Content-Type-Options", "nosniff"},
                   {"Cache-Control", "no-store"}};
  return reply;
}

}  // namespace

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

StatusPage::StatusPage(const ModelRegistry* models, StatusPageOptions options, UnixClock clock)
    : models_(models), options_(options), clock_(std::move(clock)) {}

StatusPage::~StatusPage() { StopSampling(); }

void StatusPage::StartSampling() {
  if (sampler_.joinable()) return;
  sampler_ = std::thread([this] { RunSampler(); });
}

void StatusPage::StopSampling() {
  if (!sampler_.joinable()) return;
  {
    MutexLock lock(&sampler_mu_);
    stopping_ = true;
  }
  sampler_cv_.SignalAll();
  sampler_.join();
}

void StatusPage::RunSampler() {
  MutexLock lock(&sampler_mu_);
  while (!stopping_) {
    Sample();
    // Spurious wake-ups only sample early; points carry their own times.
    sampler_cv_.WaitFor(&sampler_mu_, options_.sample_interval);
  }
}

StatusPoint StatusPage::PointOf(const ServedModel& model, double now) const {
  const MetricsSummary lifetime = model.ProgressiveSummary();
  const MetricsSummary recent = model.RecentProgressiveSummary();
  StatusPoint p;
  p.unix_seconds = now;
  p.update_examples = model.update_examples();
  p.predictions = model.predictions();
  p.logloss = lifetime.logloss;
  p.auc = lifetime.auc;
  p.calibration = lifetime.calibration;
  p.recent_logloss = recent.logloss;
  p.recent_auc = recent.auc;
  p.recent_calibration = recent.calibration;
  return p;
}

void StatusPage::Sample() {
  const double now = clock_();
  const std::vector<std::shared_ptr<ServedModel>> served = models_->List();
  std::vector<StatusPoint> points;
  points.reserve(served.size());
  // Read the models (their own locks) before taking ours.
  for (const auto& model : served) points.push_back(PointOf(*model, now));

  MutexLock lock(&mu_);
  absl::flat_hash_map<std::string, History> kept;
  for (size_t i = 0; i < served.size(); ++i) {
    History history;
    if (auto it = histories_.find(served[i]->name());
        it != histories_.end() && it->second.model.lock() == served[i]) {
      history = std::move(it->second);
    }
    history.model = served[i];
    history.points.push_back(points[i]);
    while (history.points.size() > static_cast<size_t>(std::max(options_.max_points, 1))) {
      history.points.pop_front();
    }
    kept.emplace(served[i]->name(), std::move(history));
  }
  histories_ = std::move(kept);
}

void StatusPage::SetKafkaReader(KafkaReader read) {
  MutexLock lock(&mu_);
  read_kafka_ = std::move(read);
}

void StatusPage::SetLoadReader(ServerLoadReader read) {
  MutexLock lock(&mu_);
  read_load_ = std::move(read);
}

StatusReport StatusPage::Report(double since) const {
  StatusReport report;
  report.unix_seconds = clock_();
  report.sample_interval_seconds = std::chrono::duration<double>(options_.sample_interval).count();
  report.max_points = options_.max_points;
  ServerLoadReader read_load;
  KafkaReader read_kafka;
  {
    ReaderMutexLock lock(&mu_);
    read_load = read_load_;
    read_kafka = read_kafka_;
  }
  if (read_load) report.load = read_load();
  std::map<std::string, KafkaStatus> kafka;
  if (read_kafka) {
    for (auto& [name, source] : read_kafka()) kafka[name] = std::move(source);
  }
  for (const std::shared_ptr<ServedModel>& model : models_->List()) {
    ModelStatus m;
    m.config = model->model().config();
    m.stats = model->CachedStats();
    m.update_examples = model->update_examples();
    m.predictions = model->predictions();
    m.lifetime = model->ProgressiveSummary();
    m.recent = model->RecentProgressiveSummary();
    if (auto it = kafka.find(model->name()); it != kafka.end()) m.kafka = it->second;
    {
      ReaderMutexLock lock(&mu_);
      auto it = histories_.find(model->name());
      if (it != histories_.end() && it->second.model.lock() == model) {
        const std::deque<StatusPoint>& points = it->second.points;
        if (points.size() >= 2) {
          const StatusPoint& a = points[points.size() - 2];
          const StatusPoint& b = points.back();
          m.update_rate =
              Rate(a.update_examples, b.update_examples, b.unix_seconds - a.unix_seconds);
          m.prediction_rate = Rate(a.predictions, b.predictions, b.unix_seconds - a.unix_seconds);
        }
        for (const StatusPoint& p : points) {
          if (p.unix_seconds > since) m.points.push_back(p);
        }
      }
    }
    report.models.push_back(std::move(m));
  }
  return report;
}

std::vector<metrics::HttpPage> StatusPage::Pages() const {
  auto json = [this](const std::map<std::string, std::string>& query) {
    metrics::HttpReply reply;
    double since = 0;
    if (auto it = query.find("since");
        it != query.end() && !(absl::SimpleAtod(it->second, &since) && std::isfinite(since))) {
      reply.status = 400;
      reply.content_type = "text/plain; charset=utf-8";
      reply.body = "since must be a number of seconds since the Unix epoch\n";
      return reply;
    }
    reply.content_type = "application/json";
    reply.body = StatusJson(Report(since));
    reply.headers = {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}};
    return reply;
  };
  return {{"/", [](const std::map<std::string, std::string>&) { return Html(); }},
          {"/status.json", json}};
}

}  // namespace clickd::status
