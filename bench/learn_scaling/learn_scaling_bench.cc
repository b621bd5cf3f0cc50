// learn_scaling_bench: examples learned per second by one model from 1 and
// from 2 concurrent callers, through the service's own Update path
// (ClickdService::ApplyUpdate: validation, conversion, learning, the
// journal when durable, progressive metrics), without gRPC, so that the
// client does not share the two cores (docs/performance.md, "Learning on
// two cores"). Each caller sends pre-built UpdateRequests of --examples x
// --features hashed-by-name features. Prints one JSON line per setting.
//
//   learn_scaling_bench [--seconds=5] [--examples=100] [--features=40]
//                       [--sync=none|every_request|memory] [--threads=1,2]
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clickd/v1/clickd.pb.h"
#include "core/serving/registry.h"
#include "server/limits.h"
#include "server/service.h"

ABSL_FLAG(double, seconds, 5, "measured seconds per setting");
ABSL_FLAG(int, examples, 100, "examples per UpdateRequest");
ABSL_FLAG(int, features, 40, "features per example (names, in two namespaces)");
ABSL_FLAG(std::string, sync, "memory",
          "memory (no data directory), none or every_request (--update_log_sync)");
ABSL_FLAG(std::string, threads, "1,2", "caller counts to measure, in order");
ABSL_FLAG(std::string, dir, "/tmp/learn_scaling_bench", "data directory (durable settings)");

namespace clickd {
namespace {

// Requests of a synthetic click log: Zipf-like feature values so that
// some coordinates are hot, as in real traffic.
std::vector<v1::UpdateRequest> MakeRequests(int count, int examples, int features) {
  std::mt19937_64 rng(7);
  std::vector<v1::UpdateRequest> requests(count);
  for (v1::UpdateRequest& r : requests) {
    r.set_model("bench");
    for (int e = 0; e < examples; ++e) {
      v1::LabeledExample* labeled = r.add_examples();
      labeled->set_label(rng() % 30 == 0 ? 1 : 0);
      for (int n = 0; n < 2; ++n) {
        v1::Namespace* ns = labeled->mutable_example()->add_namespaces();
        ns->set_name(n == 0 ? "user" : "ad");
        for (int f = n; f < features; f += 2) {
          const uint64_t value = static_cast<uint64_t>(
              std::pow(2.0, std::uniform_real_distribution<double>(0, 20)(rng)));
          ns->add_features()->set_name(absl::StrCat(n == 0 ? "u" : "a", f, "=", value));
        }
      }
    }
  }
  return requests;
}

// Examples learned per second by `threads` callers over `seconds`.
double Measure(ClickdService& service, ServedModel& served,
               const std::vector<v1::UpdateRequest>& requests, int threads, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> examples{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&, t] {
      v1::UpdateResponse response;
      std::vector<ScoredExample> scored;
      for (size_t i = t; !stop.load(std::memory_order_relaxed); i += threads) {
        const v1::UpdateRequest& request = requests[i % requests.size()];
        response.Clear();
        scored.clear();
        if (service.ApplyUpdate(served, request, &response, &scored).ok()) {
          examples.fetch_add(request.examples_size(), std::memory_order_relaxed);
        } else {
          failures.fetch_add(1);
        }
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& t : callers) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures > 0)
    std::fprintf(stderr, "learn_scaling_bench: %lu failed calls\n", failures.load());
  return examples.load() / elapsed;
}

int Run() {
  const std::string sync = absl::GetFlag(FLAGS_sync);
  DurabilityOptions durability;
  if (sync != "memory") {
    auto mode = ParseSyncMode(sync);
    if (!mode.ok()) {
      std::fprintf(stderr, "learn_scaling_bench: --sync: %s\n", mode.status().ToString().c_str());
      return 2;
    }
    durability.data_dir = absl::GetFlag(FLAGS_dir);
    durability.journal.log.sync = *mode;
  }
  const std::string data_dir = durability.data_dir;
  std::vector<int> thread_counts;
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_threads), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1 || n > 64) {
      std::fprintf(stderr, "learn_scaling_bench: --threads: bad count\n");
      return 2;
    }
    thread_counts.push_back(n);
  }
  const std::vector<v1::UpdateRequest> requests =
      MakeRequests(512, absl::GetFlag(FLAGS_examples), absl::GetFlag(FLAGS_features));
  double first = 0;
  for (int threads : thread_counts) {
    // A fresh model per setting, warmed by one pass over the requests so
    // that each setting learns into a model of the same size.
    if (!data_dir.empty()) std::filesystem::remove_all(data_dir);
    ModelRegistry registry(durability);
    ModelConfig config;
    config.name = "bench";
    auto served = registry.Create(config);
    if (!served.ok()) {
      std::fprintf(stderr, "learn_scaling_bench: %s\n", served.status().ToString().c_str());
      return 1;
    }
    ClickdService service({.registry = &registry});
    Measure(service, **served, requests, 1, 0.5);
    const double rate = Measure(service, **served, requests, threads, absl::GetFlag(FLAGS_seconds));
    if (first == 0) first = rate;
    std::printf(
        "{\"sync\": \"%s\", \"threads\": %d, \"examples_per_second\": %.0f, "
        "\"ratio_to_first\": %.3f}\n",
        sync.c_str(), threads, rate, rate / first);
    std::fflush(stdout);
  }
  if (!data_dir.empty()) std::filesystem::remove_all(data_dir);
  return 0;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::Run();
}
