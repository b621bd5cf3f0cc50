// What the memory budget costs a learner (docs/memory.md, "Cost"). Learns
// one stream twice on one thread, into an FTRL model without a budget and
// into one whose budget holds --coordinates (the smallest budget whose
// tables hold that many: the per-shard share is rounded up to a whole
// power-of-two table), and prints for each: examples/s, the longest and
// the p99.9 step (one Learn call: where an eviction pass lands), the
// coordinates held and evicted, and the tables' bytes.
//
// With --ttl_rounds (0: skipped) a third run learns the stream into a model
// without a budget but with that TTL (docs/memory.md, "TTL eviction"): its
// examples/s against the unbounded run's are the cost of the marks and
// sweeps, its longest step is a shard's sweep, and it prints the
// coordinates expired and the marks' bytes.
//
// The stream: each example has --frequent features from a pool of 100,000
// keys (Zipf-like: a square of a uniform draw) and --fresh features never
// seen before, so the store meets --examples x --fresh new keys.
//
// Usage: memory_budget_bench [--coordinates=10000000] [--examples=1500000]
//        [--frequent=20] [--fresh=20] [--shards=16] [--ttl_rounds=100000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/model/model.h"
#include "core/optim/ftrl.h"
#include "core/store/flat_table.h"

ABSL_FLAG(uint64_t, coordinates, 10'000'000, "coordinates the budget must hold at least");
ABSL_FLAG(int, examples, 1'500'000, "examples learned per run");
ABSL_FLAG(int, frequent, 20, "features per example from the pool of 100,000 keys");
ABSL_FLAG(int, fresh, 20, "features per example never seen before");
ABSL_FLAG(int, shards, 16, "store shards");
ABSL_FLAG(uint64_t, ttl_rounds, 100'000, "the TTL run's memory.ttl_rounds (0: no TTL run)");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

// The bytes of `shards` tables of FTRL slots, each the smallest that holds
// its share of `coordinates`.
uint64_t BudgetHolding(uint64_t coordinates, int shards) {
  using Table = FlatTable<FtrlProximal::State>;
  const size_t per_shard = (coordinates + shards - 1) / shards;
  return shards * Table::CapacityFor(per_shard) * sizeof(Table::Slot);
}

struct Run {
  double seconds = 0;
  double longest_step_us = 0;
  double p999_step_us = 0;
  ModelStats stats;
};

Run Learn(uint64_t max_bytes, uint64_t ttl_rounds = 0) {
  ModelConfig config;
  config.name = "bench";
  config.num_shards = absl::GetFlag(FLAGS_shards);
  config.memory.max_bytes = max_bytes;
  config.memory.ttl_rounds = ttl_rounds;
  auto model = *CreateModel(config);
  const int examples = absl::GetFlag(FLAGS_examples);
  const int frequent = absl::GetFlag(FLAGS_frequent);
  const int fresh = absl::GetFlag(FLAGS_fresh);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(0, 1);
  uint64_t next_fresh = 1'000'000;
  std::vector<HashedFeature> features;
  std::vector<float> step_us;
  step_us.reserve(examples);
  const Clock::time_point start = Clock::now();
  for (int e = 0; e < examples; ++e) {
    features.clear();
    int clicks = 0;
    for (int i = 0; i < frequent; ++i) {
      const double u = uniform(rng);
      const auto key = static_cast<uint64_t>(u * u * 100'000);
      clicks += key % 9 == 0;
      features.push_back({key * 0x9E3779B97F4A7C15ull, 1.0f});
    }
    for (int i = 0; i < fresh; ++i)
      features.push_back({(next_fresh++) * 0xC2B2AE3D27D4EB4Full, 1.0f});
    std::sort(features.begin(), features.end(),
              [](const HashedFeature& a, const HashedFeature& b) { return a.key < b.key; });
    features.erase(
        std::unique(features.begin(), features.end(),
                    [](const HashedFeature& a, const HashedFeature& b) { return a.key == b.key; }),
        features.end());
    const double label = clicks >= 3 ? 1 : 0;
    const Clock::time_point t0 = Clock::now();
    model->Learn(features, label, 1.0);
    step_us.push_back(std::chrono::duration<float, std::micro>(Clock::now() - t0).count());
  }
  Run run;
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(step_us.begin(), step_us.end());
  run.longest_step_us = step_us.back();
  run.p999_step_us = step_us[step_us.size() * 999 / 1000];
  run.stats = model->Stats();
  return run;
}

void Print(const char* name, uint64_t max_bytes, const Run& run) {
  std::printf(
      "%-10s budget %11llu B  %9.0f examples/s  longest step %8.1f ms  p99.9 step %7.1f us  "
      "coordinates %9llu  evicted %9llu  expired %9llu  bytes %11llu\n",
      name, static_cast<unsigned long long>(max_bytes), absl::GetFlag(FLAGS_examples) / run.seconds,
      run.longest_step_us / 1000, run.p999_step_us,
      static_cast<unsigned long long>(run.stats.coordinates),
      static_cast<unsigned long long>(run.stats.coordinates_evicted),
      static_cast<unsigned long long>(run.stats.coordinates_expired),
      static_cast<unsigned long long>(run.stats.bytes));
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const uint64_t budget =
      clickd::BudgetHolding(absl::GetFlag(FLAGS_coordinates), absl::GetFlag(FLAGS_shards));
  std::printf("%d examples x (%d frequent + %d fresh) features, %d shards, one learner thread\n",
              absl::GetFlag(FLAGS_examples), absl::GetFlag(FLAGS_frequent),
              absl::GetFlag(FLAGS_fresh), absl::GetFlag(FLAGS_shards));
  clickd::Print("unbounded", 0, clickd::Learn(0));
  clickd::Print("budgeted", budget, clickd::Learn(budget));
  if (const uint64_t ttl = absl::GetFlag(FLAGS_ttl_rounds); ttl != 0) {
    std::printf("ttl: memory.ttl_rounds %llu\n", static_cast<unsigned long long>(ttl));
    clickd::Print("ttl", 0, clickd::Learn(0, ttl));
  }
  return 0;
}
