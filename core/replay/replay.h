// Offline replay: trains a Model on a log file in one online pass (or
// several), scoring every example before learning from it (progressive
// validation), then optionally scores a test file without learning.
//
// This is the same Model code the server runs, so offline figures are the
// served model's figures. Not thread-safe: one replay per model at a time.
#ifndef CLICKD_CORE_REPLAY_REPLAY_H_
#define CLICKD_CORE_REPLAY_REPLAY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/eval/metrics.h"
#include "core/formats/parse.h"
#include "core/model/model.h"

namespace clickd {

struct ReplayProgress {
  uint64_t examples = 0;
  double seconds = 0;
  double mean_loss = 0;  // running mean of the model's own loss
};

struct ReplayOptions {
  InputFormat format = InputFormat::kLibsvm;
  int passes = 1;
  // Learns only the first max_examples usable examples of the training
  // file (0: all), e.g. to rebuild what a server had acknowledged.
  uint64_t max_examples = 0;
  // Shuffles the training examples (each pass anew) with this seed; the
  // generator is platform-independent, so runs are reproducible anywhere.
  std::optional<uint64_t> shuffle_seed;
  bool skip_bad_lines = false;
  // Scales each example's hashed feature vector to unit L2 length (seed 001
  // section 5.1), the bias included if the model has one.
  bool normalize = false;
  // Reads, parses and hashes the next examples on a second thread while
  // this one learns (core/replay/read_ahead.h). Results are identical
  // either way; off, a replay uses one thread.
  bool read_ahead = true;
  // Calls on_progress every `progress_every` training examples (0: never).
  uint64_t progress_every = 0;
  std::function<void(const ReplayProgress&)> on_progress;
  // Percentile-bootstrap intervals for the metrics (0: none).
  int bootstrap_resamples = 0;
  uint64_t bootstrap_seed = 1;
};

struct ReplayResult {
  MetricsSummary progressive;
  std::optional<BootstrapIntervals> progressive_ci;
  std::optional<MetricsSummary> test;
  std::optional<BootstrapIntervals> test_ci;
  uint64_t features = 0;  // hashed features learned, summed over examples
  uint64_t skipped_lines = 0;
  std::vector<std::string> skipped_errors;
  double train_seconds = 0;
  double test_seconds = 0;
};

// Replays `train_path` into `model`, then scores `test_path` if given.
// Errors: NotFound for a missing file, InvalidArgument "path:line: reason"
// for a malformed line or a label outside the loss's domain (unless
// skip_bad_lines, which counts and skips such lines).
absl::StatusOr<ReplayResult> ReplayOffline(Model& model, const std::string& train_path,
                                           const std::optional<std::string>& test_path,
                                           const ReplayOptions& options);

}  // namespace clickd

#endif  // CLICKD_CORE_REPLAY_REPLAY_H_
