#include "client/clickctl/replay_command.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/model_flags.h"
#include "core/model/state_digest.h"
#include "core/model/variant_model.h"
#include "core/replay/replay.h"

ABSL_FLAG(bool, offline, false, "replay: train in this process (no server)");
ABSL_FLAG(std::string, format, "libsvm", "replay: input format, libsvm | vw | criteo");
ABSL_FLAG(int, passes, 1, "replay: passes over the training file");
ABSL_FLAG(uint64_t, max_examples, 0,
          "replay: use only the first N usable examples of the training file (0: all)");
ABSL_FLAG(std::optional<uint64_t>, shuffle_seed, std::nullopt,
          "replay: shuffle training examples with this seed (default: file order)");
ABSL_FLAG(bool, skip_bad_lines, false,
          "replay: count and skip malformed lines instead of stopping");
ABSL_FLAG(bool, normalize, false, "replay: scale each example to unit L2 length");
ABSL_FLAG(bool, read_ahead, true,
          "replay --offline: read, parse and hash on a second thread while learning "
          "(the same results either way)");
ABSL_FLAG(std::optional<std::string>, test_file, std::nullopt,
          "replay: after training, score this file without learning from it");
ABSL_FLAG(uint64_t, progress_every, 100000, "replay: progress line every N examples (0: none)");
ABSL_FLAG(int, bootstrap, 0, "replay: bootstrap resamples for 95% intervals (0: none)");
ABSL_FLAG(uint64_t, bootstrap_seed, 1, "replay: bootstrap seed");
ABSL_FLAG(bool, json, false, "print one JSON object as the last line of stdout");

namespace clickd {
namespace {

// Adds the metrics' fields (and their 95% intervals under "ci95") to `w`.
void AddMetrics(const MetricsSummary& m, const std::optional<BootstrapIntervals>& ci,
                JsonWriter* w) {
  w->Integer("examples", m.examples)
      .Number("weight", m.weight)
      .Number("loss", m.loss)
      .Number("logloss", m.logloss)
      .Number("auc", m.auc)
      .Number("hinge", m.hinge)
      .Number("mistakes", m.mistakes)
      .Number("calibration", m.calibration)
      .Number("squared", m.squared);
  if (ci.has_value()) {
    auto interval = [](const Interval& i) {
      return JsonWriter().Number("lo", i.lo).Number("hi", i.hi).Finish();
    };
    w->Object("ci95", JsonWriter()
                          .Object("loss", interval(ci->loss))
                          .Object("logloss", interval(ci->logloss))
                          .Object("auc", interval(ci->auc))
                          .Object("mistakes", interval(ci->mistakes))
                          .Object("calibration", interval(ci->calibration))
                          .Finish());
  }
}

void PrintTable(const char* title, const MetricsSummary& m) {
  std::printf("%-12s %10s %9s %9s %9s %9s %11s\n", title, "examples", "logloss", "auc", "hinge",
              "mistakes", "calibration");
  std::printf("%-12s %10llu %9.5f %9.5f %9.5f %9.5f %11.4f\n", "",
              static_cast<unsigned long long>(m.examples), m.logloss, m.auc, m.hinge, m.mistakes,
              m.calibration);
}

// Checks the command line; an error's message is the usage error to print.
absl::Status CheckUsage(const std::vector<std::string>& args) {
  if (!absl::GetFlag(FLAGS_offline)) {
    return absl::InvalidArgumentError(
        "pass --offline to train in this process (replaying through a server needs the gRPC "
        "service)");
  }
  if (args.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("expected exactly one input FILE, got %d", args.size()));
  }
  return absl::OkStatus();
}

ReplayOptions ReplayOptionsFromFlags(InputFormat format) {
  ReplayOptions options;
  options.format = format;
  options.passes = absl::GetFlag(FLAGS_passes);
  options.max_examples = absl::GetFlag(FLAGS_max_examples);
  options.shuffle_seed = absl::GetFlag(FLAGS_shuffle_seed);
  options.skip_bad_lines = absl::GetFlag(FLAGS_skip_bad_lines);
  options.normalize = absl::GetFlag(FLAGS_normalize);
  options.read_ahead = absl::GetFlag(FLAGS_read_ahead);
  options.progress_every = absl::GetFlag(FLAGS_progress_every);
  options.on_progress = [](const ReplayProgress& p) {
    std::fprintf(stderr, "progress: %llu examples, %.1f s, %.0f examples/s, mean loss %.5f\n",
                 static_cast<unsigned long long>(p.examples), p.seconds, p.examples / p.seconds,
                 p.mean_loss);
  };
  options.bootstrap_resamples = absl::GetFlag(FLAGS_bootstrap);
  options.bootstrap_seed = absl::GetFlag(FLAGS_bootstrap_seed);
  return options;
}

// Prints the human-readable tables and the throughput line.
void PrintSummary(const ReplayResult& result, const ModelStats& stats) {
  const double seconds = result.train_seconds;
  const uint64_t n = result.progressive.examples;
  PrintTable("progressive", result.progressive);
  if (result.test.has_value()) PrintTable("test", *result.test);
  std::printf(
      "%.3f s, %.0f examples/s, %.0f features/s; %llu coordinates, %llu bytes, %llu "
      "skipped lines\n",
      seconds, n / seconds, result.features / seconds,
      static_cast<unsigned long long>(stats.coordinates),
      static_cast<unsigned long long>(stats.bytes),
      static_cast<unsigned long long>(result.skipped_lines));
}

// The --json line: the progressive metrics at the top level (the documented
// fields), then throughput, size and digest, and the test metrics under
// "test".
std::string ReplayJson(const ModelConfig& config, const ReplayResult& result, const Model& model) {
  const ModelStats stats = model.Stats();
  const double seconds = result.train_seconds;
  const uint64_t n = result.progressive.examples;
  JsonWriter w;
  w.String("optimizer", OptimizerTypeName(config.optimizer.type))
      .String("loss_function", LossTypeName(config.loss));
  AddMetrics(result.progressive, result.progressive_ci, &w);
  w.Number("seconds", seconds)
      .Number("examples_per_second", n / seconds)
      .Number("features_per_second", result.features / seconds)
      .Integer("features", result.features)
      .Integer("coordinates", stats.coordinates)
      .Integer("bytes", stats.bytes)
      .Number("bytes_per_coordinate",
              stats.coordinates ? static_cast<double>(stats.bytes) / stats.coordinates : 0)
      .Integer("skipped_lines", result.skipped_lines)
      .String("model_digest", StateDigest(model));
  if (result.test.has_value()) {
    JsonWriter test;
    AddMetrics(*result.test, result.test_ci, &test);
    w.Object("test", test.Finish());
  }
  // A model with variants: each variant's progressive figures; the metrics
  // above are the champion's (what Predict would have served).
  if (const auto* variants = dynamic_cast<const VariantModel*>(&model); variants != nullptr) {
    std::vector<std::string> items;
    for (const VariantReport& r : variants->Reports()) {
      JsonWriter v;
      v.String("name", r.name)
          .String("optimizer", r.optimizer)
          .Bool("champion", r.champion)
          .Integer("examples", r.examples)
          .Number("loss", r.loss)
          .Number("recent_loss", r.recent_loss)
          .Integer("coordinates", r.coordinates)
          .Integer("bytes", r.bytes);
      items.push_back(v.Finish());
    }
    w.Object("variants", "[" + absl::StrJoin(items, ",") + "]");
  }
  return w.Finish();
}

}  // namespace

int RunReplayCommand(const std::vector<std::string>& args) {
  if (absl::Status usage = CheckUsage(args); !usage.ok()) {
    std::cerr << "clickctl replay: " << usage.message() << "\n";
    return 2;
  }
  auto config = BuildModelConfig(ModelFlagValuesFromFlags());
  auto format = ParseInputFormat(absl::GetFlag(FLAGS_format));
  if (!config.ok() || !format.ok()) {
    std::cerr << "clickctl replay: " << (config.ok() ? format.status() : config.status()).message()
              << "\n";
    return 2;
  }
  auto model = CreateModel(*config);
  if (!model.ok()) {
    std::cerr << "clickctl replay: " << model.status().message() << "\n";
    return 2;
  }
  auto result = ReplayOffline(**model, args[0], absl::GetFlag(FLAGS_test_file),
                              ReplayOptionsFromFlags(*format));
  if (!result.ok()) {
    std::cerr << "clickctl replay: " << result.status().message() << "\n";
    return 1;
  }
  for (const std::string& e : result->skipped_errors) std::cerr << "skipped: " << e << "\n";
  PrintSummary(*result, (*model)->Stats());
  if (absl::GetFlag(FLAGS_json)) std::printf("%s\n", ReplayJson(*config, *result, **model).c_str());
  return 0;
}

}  // namespace clickd
