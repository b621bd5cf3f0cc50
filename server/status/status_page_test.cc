#include "server/status/status_page.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/metrics/registry.h"

namespace clickd::status {
namespace {

using nlohmann::json;

ModelConfig Named(const std::string& name) {
  ModelConfig c;
  c.name = name;
  return c;
}

// Teaches `model` n examples, half of them clicks.
void Learn(ServedModel& model, int n) {
  std::vector<Example> examples(n);
  std::vector<TrainingExample> batch;
  for (int i = 0; i < n; ++i) {
    examples[i].namespaces.push_back({"ad", {Feature::WithId(i % 5)}});
  }
  for (int i = 0; i < n; ++i) batch.push_back({nullptr, &examples[i], i % 2 ? 1.0f : 0.0f, 1.0f});
  ASSERT_TRUE(model.Learn(batch).ok());
}

// A clock the test moves.
struct FakeClock {
  std::shared_ptr<std::atomic<double>> now = std::make_shared<std::atomic<double>>(1000.0);
  UnixClock clock() const {
    return [now = now] { return now->load(); };
  }
  void Advance(double seconds) { *now = *now + seconds; }
};

TEST(StatusPage, SamplesEveryModelWithinItsBound) {
  ModelRegistry registry;
  auto a = *registry.Create(Named("a"));
  ASSERT_TRUE(registry.Create(Named("b")).ok());
  FakeClock clock;
  StatusPage page(&registry, {.max_points = 3}, clock.clock());

  EXPECT_EQ(page.Report().models.size(), 2u);
  EXPECT_TRUE(page.Report().models[0].points.empty());
  for (int i = 0; i < 5; ++i) {
    Learn(*a, 10);
    a->RecordPredictions(4);
    page.Sample();
    clock.Advance(2);
  }
  const StatusReport report = page.Report();
  EXPECT_EQ(report.max_points, 3);
  EXPECT_EQ(report.sample_interval_seconds, 2);
  ASSERT_EQ(report.models.size(), 2u);
  const ModelStatus& m = report.models[0];
  EXPECT_EQ(m.config.name, "a");
  ASSERT_EQ(m.points.size(), 3u);  // the oldest two are gone
  EXPECT_EQ(m.points[0].unix_seconds, 1004);
  EXPECT_EQ(m.points[2].unix_seconds, 1008);
  EXPECT_EQ(m.points[2].update_examples, 50u);
  EXPECT_EQ(m.points[2].predictions, 20u);
  EXPECT_EQ(m.update_examples, 50u);
  EXPECT_EQ(m.stats.updates, 50u);
  EXPECT_GT(m.stats.coordinates, 0u);
  EXPECT_DOUBLE_EQ(m.update_rate, 5);  // 10 examples in 2 s
  EXPECT_DOUBLE_EQ(m.prediction_rate, 2);
  EXPECT_TRUE(std::isfinite(m.points[2].logloss));
  EXPECT_TRUE(std::isfinite(m.points[2].recent_auc));
  EXPECT_TRUE(std::isfinite(m.lifetime.logloss));
  // A model that learned nothing has points, rates of 0 and no metrics.
  const ModelStatus& b = report.models[1];
  ASSERT_EQ(b.points.size(), 3u);
  EXPECT_EQ(b.update_rate, 0);
  EXPECT_TRUE(std::isnan(b.points[2].logloss));

  // Only the points newer than `since`.
  const StatusReport newer = page.Report(1006);
  ASSERT_EQ(newer.models[0].points.size(), 1u);
  EXPECT_EQ(newer.models[0].points[0].unix_seconds, 1008);
}

TEST(StatusPage, ForgetsDeletedModelsAndStartsAgainForANewOne) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(Named("m")).ok());
  FakeClock clock;
  StatusPage page(&registry, {}, clock.clock());
  page.Sample();
  clock.Advance(2);
  page.Sample();
  ASSERT_EQ(page.Report().models[0].points.size(), 2u);

  ASSERT_TRUE(registry.Delete("m").ok());
  EXPECT_TRUE(page.Report().models.empty());
  auto again = *registry.Create(Named("m"));
  // The old model's points are not the new one's.
  EXPECT_TRUE(page.Report().models[0].points.empty());
  clock.Advance(2);
  page.Sample();
  ASSERT_EQ(page.Report().models[0].points.size(), 1u);
  EXPECT_TRUE(std::isnan(page.Report().models[0].update_rate));
}

TEST(StatusPage, SamplerThreadTakesPoints) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(Named("m")).ok());
  StatusPage page(&registry, {.sample_interval = std::chrono::milliseconds(5)});
  page.StartSampling();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (page.Report().models[0].points.size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  page.StopSampling();
  page.StopSampling();  // idempotent
  const size_t taken = page.Report().models[0].points.size();
  EXPECT_GE(taken, 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(page.Report().models[0].points.size(), taken);  // stopped
}

TEST(StatusPage, ServedBesideMetrics) {
  ModelRegistry registry;
  auto m = *registry.Create(Named("ctr"));
  Learn(*m, 20);
  StatusPage page(&registry);
  page.Sample();
  metrics::Registry metrics;
  metrics.BuildGauge("x", "An x.").Add({}).Set(1);
  auto exporter = metrics::HttpExporter::Start("127.0.0.1", 0, &metrics, page.Pages());
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  httplib::Client client("127.0.0.1", (*exporter)->port());

  auto html = client.Get("/");
  ASSERT_TRUE(html);
  EXPECT_EQ(html->status, 200);
  EXPECT_EQ(html->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(html->get_header_value("Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
  EXPECT_NE(html->body.find("status.json"), std::string::npos);
  EXPECT_EQ(html->body.find("http://"), std::string::npos);  // self-contained
  EXPECT_EQ(html->body.find("https://"), std::string::npos);

  auto status = client.Get("/status.json");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(status->get_header_value("Content-Type"), "application/json");
  const json parsed = json::parse(status->body, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << status->body;
  ASSERT_EQ(parsed["models"].size(), 1u);
  EXPECT_EQ(parsed["models"][0]["name"], "ctr");
  EXPECT_EQ(parsed["models"][0]["update_examples"].get<int>(), 20);
  EXPECT_EQ(parsed["models"][0]["points"]["t"].size(), 1u);

  const double t = parsed["models"][0]["points"]["t"][0].get<double>();
  auto newer = client.Get("/status.json?since=" + std::to_string(t + 1));
  ASSERT_TRUE(newer);
  EXPECT_EQ(json::parse(newer->body)["models"][0]["points"]["t"].size(), 0u);

  // The load appears once the server can read it (after the page is served).
  EXPECT_TRUE(parsed["load"].is_null());
  page.SetLoadReader([] { return ServerLoad{.open_streams = 4, .max_open_streams = 9}; });
  auto loaded = client.Get("/status.json");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(json::parse(loaded->body)["load"]["open_streams"].get<int>(), 4);
  EXPECT_EQ(json::parse(loaded->body)["load"]["max_open_streams"].get<int>(), 9);

  auto bad = client.Get("/status.json?since=yesterday");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);

  auto scrape = client.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  EXPECT_NE(scrape->body.find("x 1"), std::string::npos);
  // Paths match literally ('.' is no wildcard), and others stay 404.
  for (const char* path : {"/statusxjson", "/status.json/x", "/index.html"}) {
    auto missing = client.Get(path);
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404) << path;
  }
  (*exporter)->Stop();
}

}  // namespace
}  // namespace clickd::status
