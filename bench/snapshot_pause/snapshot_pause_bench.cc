// How long learning and scoring stall while a model snapshots
// (docs/performance.md, "Snapshot pause"). For each model size:
//
// 1. fills an FTRL model with N coordinates (ids 0..N-1, learned directly);
// 2. opens a journal on it in --dir (the file log with sync none, or the
//    memory log) and starts a learner thread (ModelJournal::Learn on batches
//    of 100 examples x 40 features, ids Zipf-like over 0..N-1, so learning
//    changes coordinates the snapshot is copying) and a scorer thread (a
//    Predict-like call every 500 us: 10 candidates of 40 features, hashed
//    and scored);
// 3. after --before_s seconds, takes --snapshots snapshots (ModelJournal::
//    Snapshot), --gap_s apart, on a thread of its own: with
//    --encoder_nice (the default, as clickd's snapshotter does) that thread
//    reads the shards at nice --snapshot_nice (0) and hands the sort,
//    encoding and write to a BackgroundThread at nice +--encoder_nice (10);
//    with --encoder_nice=-1 the whole snapshot runs at --snapshot_nice;
// 4. prints, before and during the snapshots: the longest gap between two
//    consecutive learned batches, the learned batches/s, the scorer's p50,
//    p99 and max; and per snapshot its wall time, the pause the journal
//    reports and the file's bytes.
//
// Usage: snapshot_pause_bench --dir=DIR [--coordinates=1000000,10000000]
//        [--log=file|memory]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/base/background_thread.h"
#include "core/model/serving.h"
#include "core/persist/memory_update_log.h"
#include "core/persist/model_journal.h"

ABSL_FLAG(std::string, dir, "", "directory for the benchmark's models (removed after)");
ABSL_FLAG(std::string, coordinates, "1000000,10000000", "model sizes");
ABSL_FLAG(std::string, log, "file", "update log: file (sync none) or memory");
ABSL_FLAG(double, before_s, 2, "seconds of learning and scoring before the first snapshot");
ABSL_FLAG(int, snapshots, 3, "snapshots per model size");
ABSL_FLAG(double, gap_s, 0.5, "seconds between snapshots");
ABSL_FLAG(int, snapshot_nice, 0,
          "nice value of the snapshot thread, which reads the shards (clickd's: 0)");
ABSL_FLAG(int, encoder_nice, 10,
          "nice increment of the thread that sorts, encodes and writes the snapshot (clickd's: "
          "10); -1: none, the snapshot thread does it all at --snapshot_nice");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

ModelConfig Config() {
  ModelConfig c;
  c.name = "bench";
  c.hashing.bias = false;
  return c;
}

Example WithIds(const std::vector<uint64_t>& ids) {
  Example e;
  std::vector<Feature> fs;
  for (uint64_t id : ids) fs.push_back(Feature::WithId(id));
  e.namespaces.push_back({"f", std::move(fs)});
  return e;
}

// Learns ids 0..n-1, 50 per example, without a journal.
void Fill(Model& model, uint64_t n) {
  constexpr int kFeatures = 50;
  uint64_t next = 0;
  std::vector<uint64_t> ids;
  std::vector<HashedFeature> features;
  while (next < n) {
    ids.clear();
    for (int f = 0; f < kFeatures && next < n; ++f) ids.push_back(next++);
    features.clear();
    model.hasher().Hash(WithIds(ids), &features);
    model.Learn(features, next % 7 == 0 ? 1.0 : 0.0, 1.0);
  }
}

// `count` examples of 40 ids, Zipf-like over 0..n-1.
std::vector<Example> ZipfExamples(size_t count, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double exponent = std::log(static_cast<double>(n)) / std::log(1e6);
  std::vector<Example> out;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < count; ++i) {
    ids.clear();
    for (int f = 0; f < 40; ++f) {
      ids.push_back(static_cast<uint64_t>(std::pow(rng() % 1000000 + 1.0, exponent)) % n);
    }
    out.push_back(WithIds(ids));
  }
  return out;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

struct Window {
  Clock::time_point begin, end;
  bool Contains(Clock::time_point t) const { return t >= begin && t < end; }
};

// The longest gap between consecutive learned batches that overlaps a window.
double LongestStall(const std::vector<Clock::time_point>& learned,
                    const std::vector<Window>& windows) {
  double longest = 0;
  for (size_t i = 1; i < learned.size(); ++i) {
    for (const Window& w : windows) {
      if (learned[i] > w.begin && learned[i - 1] < w.end) {
        longest = std::max(longest, Seconds(learned[i] - learned[i - 1]));
      }
    }
  }
  return longest;
}

size_t CountIn(const std::vector<Clock::time_point>& times, const std::vector<Window>& windows) {
  size_t n = 0;
  for (Clock::time_point t : times) {
    for (const Window& w : windows) n += w.Contains(t);
  }
  return n;
}

double Total(const std::vector<Window>& windows) {
  double s = 0;
  for (const Window& w : windows) s += Seconds(w.end - w.begin);
  return s;
}

void Run(const std::string& root, uint64_t n, bool memory_log) {
  const std::string dir = root + "/snapshot_pause_" + std::to_string(n);
  std::filesystem::remove_all(dir);
  auto model = *CreateModel(Config());
  auto fill_start = Clock::now();
  Fill(*model, n);
  const double fill_s = Seconds(Clock::now() - fill_start);
  JournalOptions options;
  options.log.sync = SyncMode::kNone;
  if (memory_log) options.open_log = MemoryUpdateLog::Opener();
  auto journal = ModelJournal::Create(dir, Config(), options);
  if (!journal.ok()) {
    std::fprintf(stderr, "%s\n", journal.status().ToString().c_str());
    std::exit(1);
  }

  const std::vector<Example> train = ZipfExamples(20000, n, 2);
  std::vector<std::vector<TrainingExample>> batches;
  for (size_t b = 0; b + 100 <= train.size(); b += 100) {
    std::vector<TrainingExample> batch;
    for (size_t i = b; i < b + 100; ++i) {
      batch.push_back({nullptr, &train[i], (i % 10 == 0) ? 1.0f : 0.0f, 1.0f});
    }
    batches.push_back(std::move(batch));
  }
  const std::vector<Example> candidates = ZipfExamples(10000, n, 3);

  std::atomic<bool> stop{false};
  std::vector<Clock::time_point> learned;
  learned.reserve(1 << 22);
  std::thread learner([&] {
    for (size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      if (!(*journal)->Learn(*model, batches[i % batches.size()]).ok()) std::exit(1);
      learned.push_back(Clock::now());
    }
  });
  std::vector<Clock::time_point> scored_at;
  std::vector<double> scored_us;
  scored_at.reserve(1 << 22);
  scored_us.reserve(1 << 22);
  std::thread scorer([&] {
    auto next = Clock::now();
    volatile double sink = 0;
    for (size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      next += std::chrono::microseconds(500);
      std::this_thread::sleep_until(next);
      const auto start = Clock::now();
      double sum = 0;
      for (int c = 0; c < 10; ++c) sum += model->Predict(candidates[(i * 10 + c) % 10000]);
      sink = sink + sum;
      scored_at.push_back(start);
      scored_us.push_back(Seconds(Clock::now() - start) * 1e6);
    }
  });

  const auto base_begin = Clock::now() + std::chrono::milliseconds(300);
  std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_before_s)));
  const std::vector<Window> before = {{base_begin, Clock::now()}};
  std::vector<Window> during;
  std::vector<SnapshotReport> reports;
  // On a thread of its own, as clickd's snapshotter.
  const int encoder_nice = absl::GetFlag(FLAGS_encoder_nice);
  std::optional<BackgroundThread> encoder;
  if (encoder_nice >= 0) encoder.emplace(encoder_nice);
  std::thread snapshotter([&] {
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()),
                    absl::GetFlag(FLAGS_snapshot_nice)) != 0) {
      std::perror("setpriority");
    }
    for (int k = 0; k < absl::GetFlag(FLAGS_snapshots); ++k) {
      Window w;
      w.begin = Clock::now();
      auto report = (*journal)->Snapshot(*model, nullptr, nullptr, {},
                                         encoder.has_value() ? &*encoder : nullptr);
      w.end = Clock::now();
      if (!report.ok()) {
        std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
        std::exit(1);
      }
      during.push_back(w);
      reports.push_back(*report);
      std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_gap_s)));
    }
  });
  snapshotter.join();
  stop = true;
  learner.join();
  scorer.join();

  for (size_t k = 0; k < reports.size(); ++k) {
    std::printf(
        "snapshot coordinates=%llu wall_s=%.3f reported_pause_ms=%.3f bytes=%llu "
        "longest_learning_stall_ms=%.1f\n",
        static_cast<unsigned long long>(reports[k].coordinates),
        Seconds(during[k].end - during[k].begin), reports[k].pause_seconds * 1e3,
        static_cast<unsigned long long>(reports[k].bytes),
        LongestStall(learned, {during[k]}) * 1e3);
  }
  auto latencies = [&](const std::vector<Window>& windows) {
    std::vector<double> out;
    for (size_t i = 0; i < scored_at.size(); ++i) {
      for (const Window& w : windows) {
        if (w.Contains(scored_at[i])) out.push_back(scored_us[i]);
      }
    }
    return out;
  };
  const std::vector<double> base = latencies(before), snap = latencies(during);
  std::printf(
      "summary coordinates=%llu fill_s=%.1f log=%s\n"
      "  before:  longest_learning_stall_ms=%.1f batches_per_s=%.0f score_p50_us=%.0f "
      "score_p99_us=%.0f score_max_us=%.0f calls=%zu\n"
      "  during:  longest_learning_stall_ms=%.1f batches_per_s=%.0f score_p50_us=%.0f "
      "score_p99_us=%.0f score_max_us=%.0f calls=%zu\n",
      static_cast<unsigned long long>(n), fill_s, memory_log ? "memory" : "file",
      LongestStall(learned, before) * 1e3, CountIn(learned, before) / Total(before),
      Percentile(base, 0.5), Percentile(base, 0.99), Percentile(base, 1.0), base.size(),
      LongestStall(learned, during) * 1e3, CountIn(learned, during) / Total(during),
      Percentile(snap, 0.5), Percentile(snap, 0.99), Percentile(snap, 1.0), snap.size());
  std::fflush(stdout);
  journal->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    std::fprintf(stderr, "--dir is required\n");
    return 2;
  }
  const std::string log = absl::GetFlag(FLAGS_log);
  if (log != "file" && log != "memory") {
    std::fprintf(stderr, "--log must be file or memory\n");
    return 2;
  }
  for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_coordinates), ',')) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n == 0) {
      std::fprintf(stderr, "bad --coordinates\n");
      return 2;
    }
    clickd::Run(dir, n, log == "memory");
  }
  return 0;
}
