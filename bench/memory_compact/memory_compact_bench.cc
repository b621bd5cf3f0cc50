// What a coordinate costs in memory, and what a snapshot and a restore of a
// model of --coordinates cost, for one --encoding (float or compact;
// docs/memory.md, "The compact encoding"). Prints one line of figures.
//
// It learns examples of --features new random keys each (FTRL, defaults,
// 16 shards) until the model holds --coordinates, and measures:
//   - the process's resident memory growth (VmRSS from /proc/self/status,
//     after the model is built, minus before) per coordinate, and the
//     store's own bytes per coordinate (ModelStats.bytes);
//   - snapshot: BeginStateCopy + Finish (the copy, sort and layout of every
//     coordinate) and EncodeSnapshot (the file's bytes with their CRCs), in
//     seconds, and the snapshot's size;
//   - restore: DecodeSnapshot (checks every CRC) and ImportState into a new
//     model, in seconds.
// Run each encoding in its own process (run.sh does), so that one's freed
// memory does not hide the other's growth.
//
// With --ttl_rounds (0: none) the model has a TTL, so its states carry
// their 4-byte stamps (docs/memory.md, "TTL eviction"); a TTL longer than
// the run evicts nothing, which measures the stamps' cost alone.
//
// Usage: memory_compact_bench --encoding=compact [--coordinates=10000000]
//        [--features=40] [--ttl_rounds=0]
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/throughput/bench_util.h"
#include "core/model/model.h"
#include "core/persist/snapshot.h"

ABSL_FLAG(std::string, encoding, "float", "float or compact");
ABSL_FLAG(uint64_t, coordinates, 10'000'000, "coordinates the model learns");
ABSL_FLAG(int, features, 40, "new features per example");
ABSL_FLAG(uint64_t, ttl_rounds, 0, "the model's memory.ttl_rounds (0: no TTL)");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int Main() {
  ModelConfig config;
  config.name = "bench";
  if (absl::Status s = ParseStateEncoding(absl::GetFlag(FLAGS_encoding), &config.memory.encoding);
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  config.memory.ttl_rounds = absl::GetFlag(FLAGS_ttl_rounds);
  const uint64_t target = absl::GetFlag(FLAGS_coordinates);
  std::vector<HashedFeature> features(absl::GetFlag(FLAGS_features));
  std::mt19937_64 rng(1);
  const uint64_t rss_before = bench::ResidentBytes();
  std::unique_ptr<Model> model = *CreateModel(config);
  const Clock::time_point learn_start = Clock::now();
  uint64_t examples = 0;
  for (uint64_t held = 0; held < target; held += features.size(), ++examples) {
    const size_t n = std::min<uint64_t>(features.size(), target - held);
    for (size_t i = 0; i < n; ++i) features[i] = {rng(), 1.0f};
    model->Learn(absl::MakeConstSpan(features.data(), n), examples % 30 == 0 ? 1 : 0, 1.0);
  }
  const double learn_seconds = Seconds(learn_start);
  const uint64_t rss_after = bench::ResidentBytes();
  // glibc's view: what the heap holds, and how much of it is free.
  const struct mallinfo2 heap = mallinfo2();
  const ModelStats stats = model->Stats();

  Clock::time_point start = Clock::now();
  SnapshotContents contents;
  contents.config = config;
  contents.state = model->BeginStateCopy()->Finish();
  const double copy_seconds = Seconds(start);
  start = Clock::now();
  const std::string file = EncodeSnapshot(contents);
  const double encode_seconds = Seconds(start);
  contents = SnapshotContents();

  start = Clock::now();
  absl::StatusOr<SnapshotContents> decoded = DecodeSnapshot(file);
  if (!decoded.ok()) {
    std::fprintf(stderr, "%s\n", decoded.status().ToString().c_str());
    return 1;
  }
  const double decode_seconds = Seconds(start);
  start = Clock::now();
  std::unique_ptr<Model> restored = *CreateModel(config);
  if (absl::Status s = restored->ImportState(decoded->state); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  const double import_seconds = Seconds(start);
  const bool same = restored->SerializeState() == model->SerializeState();

  std::printf(
      "encoding=%s ttl_rounds=%llu coordinates=%llu examples=%llu learn_s=%.2f "
      "rss_growth_bytes=%llu "
      "rss_bytes_per_coordinate=%.2f table_bytes_per_coordinate=%.2f snapshot_copy_s=%.3f "
      "snapshot_encode_s=%.3f snapshot_bytes=%zu restore_decode_s=%.3f restore_import_s=%.3f "
      "restored_equal=%d heap_in_use_bytes=%zu heap_free_bytes=%zu\n",
      absl::GetFlag(FLAGS_encoding).c_str(),
      static_cast<unsigned long long>(absl::GetFlag(FLAGS_ttl_rounds)),
      static_cast<unsigned long long>(stats.coordinates), static_cast<unsigned long long>(examples),
      learn_seconds, static_cast<unsigned long long>(rss_after - rss_before),
      static_cast<double>(rss_after - rss_before) / stats.coordinates,
      static_cast<double>(stats.bytes) / stats.coordinates, copy_seconds, encode_seconds,
      file.size(), decode_seconds, import_seconds, same ? 1 : 0, heap.uordblks, heap.fordblks);
  return same ? 0 : 1;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::Main();
}
