// durability_bench: the costs of durability, in one process over real files
// (docs/durability.md has the figures; bench/durability/run.sh runs it).
//
//   snapshot  a model of N coordinates (FTRL, 16-byte state + 8-byte key):
//             snapshot seconds (and how long learning pauses for the state
//             copy), file bytes and MB/s; restore seconds and MB/s; restart
//             from the update log alone (replay) for comparison.
//   sync      ModelJournal::Learn throughput, 100-example batches of 40
//             features, per --update_log_sync mode and learner thread count,
//             as a ratio to learning the same batches with no journal (modes
//             interleaved, --repeats runs each, medians).
//
// Usage: durability_bench --dir=DIR [--coordinates=1000000,10000000]
//                         [--sync_seconds=3] [--threads=1,4]
// DIR should be on the disk under test (not tmpfs).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/model/serving.h"
#include "core/persist/model_journal.h"

ABSL_FLAG(std::string, dir, "", "directory for the benchmark's models (on the disk under test)");
ABSL_FLAG(std::string, coordinates, "1000000,10000000", "model sizes for the snapshot figures");
ABSL_FLAG(double, sync_seconds, 3, "seconds per sync-mode measurement");
ABSL_FLAG(std::string, threads, "1,4", "learner threads for the sync-mode figures");
ABSL_FLAG(int, repeats, 3, "runs of each sync mode (interleaved); the median is printed");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Batches of `per_batch` examples with `features` features each. With
// `fresh_ids` every feature is a new coordinate (to grow a model fast);
// otherwise ids repeat as in a click log (Zipf-like over 1M ids).
struct Batches {
  std::vector<Example> examples;
  std::vector<std::vector<TrainingExample>> batches;
};

Batches MakeBatches(size_t count, int per_batch, int features, bool fresh_ids, uint64_t seed) {
  Batches out;
  out.examples.resize(count * per_batch);
  std::mt19937_64 rng(seed);
  uint64_t next_id = seed << 40;
  for (Example& e : out.examples) {
    std::vector<Feature> fs;
    for (int f = 0; f < features; ++f) {
      const uint64_t id =
          fresh_ids ? next_id++ : static_cast<uint64_t>(std::pow(rng() % 1000000 + 1.0, 1.3));
      fs.push_back(Feature::WithId(id));
    }
    e.namespaces.push_back({"f", std::move(fs)});
  }
  for (size_t b = 0; b < count; ++b) {
    std::vector<TrainingExample> batch;
    for (int i = 0; i < per_batch; ++i) {
      batch.push_back(
          {nullptr, &out.examples[b * per_batch + i], (rng() % 10 == 0) ? 1.0f : 0.0f, 1.0f});
    }
    out.batches.push_back(std::move(batch));
  }
  return out;
}

ModelConfig Config() {
  ModelConfig c;
  c.name = "bench";
  c.hashing.bias = false;
  return c;
}

void SnapshotFigures(const std::string& root, uint64_t coordinates) {
  const std::string dir = root + "/snapshot_" + std::to_string(coordinates);
  std::filesystem::remove_all(dir);
  JournalOptions options;
  options.log.sync = SyncMode::kNone;  // growing the model is not what is measured
  auto journal = ModelJournal::Create(dir, Config(), options);
  if (!journal.ok()) {
    std::fprintf(stderr, "%s\n", journal.status().ToString().c_str());
    std::exit(1);
  }
  auto model = *CreateModel(Config());
  constexpr int kPerBatch = 100, kFeatures = 50;
  const size_t batches = coordinates / (kPerBatch * kFeatures);
  {
    Batches data = MakeBatches(batches, kPerBatch, kFeatures, /*fresh_ids=*/true, 1);
    for (const auto& batch : data.batches) (void)(*journal)->Learn(*model, batch);
  }
  const uint64_t log_bytes = (*journal)->log_bytes();
  const double n = static_cast<double>(model->Stats().coordinates);

  // Restart from the log alone (no snapshot yet).
  journal->reset();
  auto start = Clock::now();
  auto replayed = ModelJournal::Open(dir, options);
  const double replay_s = Since(start);
  if (!replayed.ok()) std::exit(1);

  auto snapshot = replayed->journal->Snapshot(*replayed->model);
  if (!snapshot.ok()) {
    std::fprintf(stderr, "%s\n", snapshot.status().ToString().c_str());
    std::exit(1);
  }
  replayed->journal.reset();
  start = Clock::now();
  auto restored = ModelJournal::Open(dir, options);
  const double restore_s = Since(start);
  if (!restored.ok() || restored->model->SerializeState() != replayed->model->SerializeState()) {
    std::fprintf(stderr, "restore differs\n");
    std::exit(1);
  }
  const double mb = snapshot->bytes / 1e6;
  std::printf(
      "snapshot coordinates=%.0f file_bytes=%llu bytes_per_coordinate=%.1f snapshot_s=%.3f "
      "snapshot_MBps=%.0f learning_paused_s=%.3f restore_s=%.3f restore_MBps=%.0f "
      "log_bytes=%llu log_replay_s=%.3f\n",
      n, static_cast<unsigned long long>(snapshot->bytes), snapshot->bytes / n, snapshot->seconds,
      mb / snapshot->seconds, snapshot->pause_seconds, restore_s, mb / restore_s,
      static_cast<unsigned long long>(log_bytes), replay_s);
  std::fflush(stdout);
  std::filesystem::remove_all(dir);
}

struct Rate {
  double examples_per_s;
  uint64_t batches;
};

// What `threads` threads learn in `seconds`.
Rate LearnRate(const Batches& data, int threads, double seconds,
               const std::function<void(const std::vector<TrainingExample>&)>& learn) {
  std::atomic<uint64_t> examples{0}, batches{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t b = t; !stop.load(std::memory_order_relaxed); b += threads) {
        const auto& batch = data.batches[b % data.batches.size()];
        learn(batch);
        examples.fetch_add(batch.size(), std::memory_order_relaxed);
        batches.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& w : workers) w.join();
  return {examples.load() / Since(start), batches.load()};
}

// One run of `mode` (nullopt: no journal) with `threads` learners.
Rate MeasureMode(const std::string& root, const Batches& data, std::optional<SyncMode> mode,
                 int threads, double seconds, uint64_t* syncs) {
  auto model = *CreateModel(Config());
  if (!mode.has_value()) {
    return LearnRate(data, threads, seconds, [&](const auto& batch) { LearnBatch(*model, batch); });
  }
  const std::string dir = root + "/sync";
  std::filesystem::remove_all(dir);
  JournalOptions options;
  options.log.sync = *mode;
  std::atomic<uint64_t> count{0};
  options.log.on_sync = [&count](double) { count.fetch_add(1, std::memory_order_relaxed); };
  auto journal = *ModelJournal::Create(dir, Config(), options);
  const Rate rate = LearnRate(data, threads, seconds, [&](const auto& batch) {
    if (!journal->Learn(*model, batch).ok()) std::abort();
  });
  *syncs = count.load();
  journal.reset();
  std::filesystem::remove_all(dir);
  return rate;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Every mode in turn, `repeats` times, so that a change in the machine's
// load hits all modes alike; prints the median of each and its ratio to the
// median without a journal.
void SyncFigures(const std::string& root, double seconds, const std::vector<int>& thread_counts,
                 int repeats) {
  const Batches data = MakeBatches(2000, 100, 40, /*fresh_ids=*/false, 2);
  const std::vector<std::pair<const char*, std::optional<SyncMode>>> modes = {
      {"memory_only", std::nullopt},
      {"every_request", SyncMode::kEveryRequest},
      {"interval", SyncMode::kInterval},
      {"none", SyncMode::kNone}};
  for (int threads : thread_counts) {
    std::vector<std::vector<double>> rates(modes.size());
    std::vector<double> batches_per_sync(modes.size());
    for (int rep = 0; rep < repeats; ++rep) {
      for (size_t m = 0; m < modes.size(); ++m) {
        uint64_t syncs = 0;
        const Rate r = MeasureMode(root, data, modes[m].second, threads, seconds, &syncs);
        rates[m].push_back(r.examples_per_s);
        if (syncs > 0) batches_per_sync[m] = static_cast<double>(r.batches) / syncs;
      }
    }
    const double memory = Median(rates[0]);
    for (size_t m = 0; m < modes.size(); ++m) {
      std::printf(
          "sync mode=%s threads=%d examples_per_s=%.0f (median of %d; min %.0f max %.0f) "
          "ratio=%.3f batches_per_sync=%.1f\n",
          modes[m].first, threads, Median(rates[m]), repeats,
          *std::min_element(rates[m].begin(), rates[m].end()),
          *std::max_element(rates[m].begin(), rates[m].end()), Median(rates[m]) / memory,
          batches_per_sync[m]);
    }
    std::fflush(stdout);
  }
}

std::vector<uint64_t> ParseList(const std::string& text) {
  std::vector<uint64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    uint64_t v;
    if (absl::SimpleAtoi(part, &v)) out.push_back(v);
  }
  return out;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    std::fprintf(stderr, "durability_bench: --dir is required\n");
    return 2;
  }
  std::filesystem::create_directories(dir);
  std::vector<int> threads;
  for (uint64_t t : clickd::ParseList(absl::GetFlag(FLAGS_threads))) threads.push_back(t);
  clickd::SyncFigures(dir, absl::GetFlag(FLAGS_sync_seconds), threads,
                      absl::GetFlag(FLAGS_repeats));
  for (uint64_t n : clickd::ParseList(absl::GetFlag(FLAGS_coordinates))) {
    clickd::SnapshotFigures(dir, n);
  }
  return 0;
}
