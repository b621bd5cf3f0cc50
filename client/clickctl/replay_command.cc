#include "client/clickctl/replay_command.h"

#include <cstdio>
#include <iostream>
#include <optional>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/model_flags.h"
#include "core/model/state_digest.h"
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
ABSL_FLAG(std::optional<std::string>, test_file, std::nullopt,
          "replay: after training, score this file without learning from it");
ABSL_FLAG(uint64_t, progress_every, 100000, "replay: progress line every N examples (0: none)");
ABSL_FLAG(int, bootstrap, 0, "replay: bootstrap resamples for 95% intervals (0: none)");
ABSL_FLAG(uint64_t, bootstrap_seed, 1, "replay: bootstrap seed");
ABSL_FLAG(bool, json, false, "print one JSON object as the last line of stdout");

namespace clickd {
namespace {

std::string MetricsJson(const MetricsSummary& m, const std::optional<BootstrapIntervals>& ci) {
  JsonWriter w;
  w.Integer("examples", m.examples)
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
    w.Object("ci95", JsonWriter()
                         .Object("loss", interval(ci->loss))
                         .Object("logloss", interval(ci->logloss))
                         .Object("auc", interval(ci->auc))
                         .Object("mistakes", interval(ci->mistakes))
                         .Object("calibration", interval(ci->calibration))
                         .Finish());
  }
  return w.Finish();
}

void PrintTable(const char* title, const MetricsSummary& m) {
  std::printf("%-12s %10s %9s %9s %9s %9s %11s\n", title, "examples", "logloss", "auc", "hinge",
              "mistakes", "calibration");
  std::printf("%-12s %10llu %9.5f %9.5f %9.5f %9.5f %11.4f\n", "",
              static_cast<unsigned long long>(m.examples), m.logloss, m.auc, m.hinge, m.mistakes,
              m.calibration);
}

}  // namespace

int RunReplayCommand(const std::vector<std::string>& args) {
  if (!absl::GetFlag(FLAGS_offline)) {
    std::cerr << "clickctl replay: pass --offline to train in this process "
                 "(replaying through a server needs the gRPC service)\n";
    return 2;
  }
  if (args.size() != 1) {
    std::cerr << "clickctl replay: expected exactly one input FILE, got " << args.size() << "\n";
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
  ReplayOptions options;
  options.format = *format;
  options.passes = absl::GetFlag(FLAGS_passes);
  options.max_examples = absl::GetFlag(FLAGS_max_examples);
  options.shuffle_seed = absl::GetFlag(FLAGS_shuffle_seed);
  options.skip_bad_lines = absl::GetFlag(FLAGS_skip_bad_lines);
  options.normalize = absl::GetFlag(FLAGS_normalize);
  options.progress_every = absl::GetFlag(FLAGS_progress_every);
  options.on_progress = [](const ReplayProgress& p) {
    std::fprintf(stderr, "progress: %llu examples, %.1f s, %.0f examples/s, mean loss %.5f\n",
                 static_cast<unsigned long long>(p.examples), p.seconds, p.examples / p.seconds,
                 p.mean_loss);
  };
  options.bootstrap_resamples = absl::GetFlag(FLAGS_bootstrap);
  options.bootstrap_seed = absl::GetFlag(FLAGS_bootstrap_seed);

  auto result = ReplayOffline(**model, args[0], absl::GetFlag(FLAGS_test_file), options);
  if (!result.ok()) {
    std::cerr << "clickctl replay: " << result.status().message() << "\n";
    return 1;
  }
  for (const std::string& e : result->skipped_errors) std::cerr << "skipped: " << e << "\n";
  const ModelStats stats = (*model)->Stats();
  const double seconds = result->train_seconds;
  const uint64_t n = result->progressive.examples;

  PrintTable("progressive", result->progressive);
  if (result->test.has_value()) PrintTable("test", *result->test);
  std::printf(
      "%.3f s, %.0f examples/s, %.0f features/s; %llu coordinates, %llu bytes, %llu "
      "skipped lines\n",
      seconds, n / seconds, result->features / seconds,
      static_cast<unsigned long long>(stats.coordinates),
      static_cast<unsigned long long>(stats.bytes),
      static_cast<unsigned long long>(result->skipped_lines));
  if (!absl::GetFlag(FLAGS_json)) return 0;

  JsonWriter w;
  w.String("optimizer", OptimizerTypeName(config->optimizer.type))
      .String("loss_function", LossTypeName(config->loss));
  const std::string progressive = MetricsJson(result->progressive, result->progressive_ci);
  // The progressive metrics sit at the top level (the documented fields) ...
  std::string json = w.Finish();
  json.pop_back();
  json += "," + progressive.substr(1, progressive.size() - 2);
  JsonWriter tail;
  tail.Number("seconds", seconds)
      .Number("examples_per_second", n / seconds)
      .Number("features_per_second", result->features / seconds)
      .Integer("features", result->features)
      .Integer("coordinates", stats.coordinates)
      .Integer("bytes", stats.bytes)
      .Number("bytes_per_coordinate",
              stats.coordinates ? static_cast<double>(stats.bytes) / stats.coordinates : 0)
      .Integer("skipped_lines", result->skipped_lines)
      .String("model_digest", StateDigest(**model));
  // ... and the test metrics under "test".
  if (result->test.has_value()) tail.Object("test", MetricsJson(*result->test, result->test_ci));
  const std::string rest = tail.Finish();
  json += "," + rest.substr(1);
  std::printf("%s\n", json.c_str());
  return 0;
}

}  // namespace clickd
