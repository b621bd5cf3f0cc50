// The exporter over real HTTP on 127.0.0.1, with cpp-httplib's client.
#include "server/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {
namespace {

httplib::Client ClientFor(const HttpExporter& exporter) {
  httplib::Client client("127.0.0.1", exporter.port());
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  return client;
}

TEST(HttpExporter, ServesTheRegistryAtMetrics) {
  Registry registry;
  Counter& c = registry.BuildCounter("x_total", "help").Add({{"k", "v"}});
  c.Increment(3);
  auto exporter = HttpExporter::Start("127.0.0.1", 0, &registry);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  ASSERT_GT((*exporter)->port(), 0);
  httplib::Client client = ClientFor(**exporter);

  auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response->body, SerializeText(registry.Collect()));
  EXPECT_NE(response->body.find("x_total{k=\"v\"} 3\n"), std::string::npos);

  // Every scrape collects afresh.
  c.Increment();
  response = client.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_NE(response->body.find("x_total{k=\"v\"} 4\n"), std::string::npos);

  response = client.Get("/other");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 404);
  (*exporter)->Stop();
  (*exporter)->Stop();  // idempotent
}

// Connections that never send a request used to hold both of the
// exporter's threads for the 30 s keep-alive timeout, so every scrape failed
// meanwhile. Now they give their thread up after kIdleSeconds, and the pool
// is larger than a handful of them.
TEST(HttpExporter, IdleConnectionsDoNotStarveScrapes) {
  Registry registry;
  registry.BuildCounter("x_total", "help").Add({{"k", "v"}});
  auto exporter = HttpExporter::Start("127.0.0.1", 0, &registry);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  std::vector<int> idle;
  for (int i = 0; i < HttpExporter::kThreads + 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>((*exporter)->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  httplib::Client client("127.0.0.1", (*exporter)->port());
  client.set_connection_timeout(30);
  client.set_read_timeout(30);
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  for (int fd : idle) close(fd);
}

TEST(HttpExporter, StopsRightAfterStarting) {
  Registry registry;
  for (int i = 0; i < 20; ++i) {
    auto exporter = HttpExporter::Start("127.0.0.1", 0, &registry);
    ASSERT_TRUE(exporter.ok()) << exporter.status();
  }  // each destructor stops its exporter; a hang here would time the test out
}

TEST(HttpExporter, StoppedExporterRefusesConnections) {
  Registry registry;
  auto exporter = HttpExporter::Start("127.0.0.1", 0, &registry);
  ASSERT_TRUE(exporter.ok());
  httplib::Client client = ClientFor(**exporter);
  (*exporter)->Stop();
  EXPECT_FALSE(client.Get("/metrics"));
}

TEST(HttpExporter, PortInUseIsUnavailable) {
  Registry registry;
  auto first = HttpExporter::Start("127.0.0.1", 0, &registry);
  ASSERT_TRUE(first.ok());
  auto second = HttpExporter::Start("127.0.0.1", (*first)->port(), &registry);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("/metrics"), std::string::npos);
}

TEST(HttpExporter, BadAddressIsUnavailable) {
  Registry registry;
  auto exporter = HttpExporter::Start("not an address", 0, &registry);
  EXPECT_EQ(exporter.status().code(), absl::StatusCode::kUnavailable);
}

// Scrapes from several clients while other threads count: every scrape is
// a well-formed exposition and the counter never goes down.
TEST(HttpExporter, ConcurrentScrapesWhileCounting) {
  Registry registry;
  Counter& c = registry.BuildCounter("x_total", "help").Add({});
  auto exporter = HttpExporter::Start("127.0.0.1", 0, &registry);
  ASSERT_TRUE(exporter.ok());
  std::atomic<bool> done{false};
  std::vector<std::thread> counters;
  for (int t = 0; t < 3; ++t) {
    counters.emplace_back([&] {
      for (int i = 0; i < 200000 && !done.load(); ++i) c.Increment();
    });
  }
  std::vector<std::thread> scrapers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    scrapers.emplace_back([&] {
      httplib::Client client = ClientFor(**exporter);
      double last = 0;
      for (int i = 0; i < 20; ++i) {
        auto response = client.Get("/metrics");
        if (!response || response->status != 200) {
          ++failures;
          continue;
        }
        const std::string& body = response->body;
        const size_t at = body.find("\nx_total ");
        if (at == std::string::npos || body.back() != '\n') {
          ++failures;
          continue;
        }
        const double value = std::stod(body.substr(at + 9));
        if (value < last) ++failures;
        last = value;
      }
    });
  }
  for (std::thread& t : scrapers) t.join();
  done = true;
  for (std::thread& t : counters) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace clickd::metrics
