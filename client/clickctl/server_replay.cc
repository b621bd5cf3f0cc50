#include "client/clickctl/server_replay.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/delayed_click_replay.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/model_flags.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/response_json.h"
#include "core/eval/metrics.h"
#include "core/formats/example_reader.h"
#include "core/optim/loss.h"
#include "wire/example_proto.h"
#include "wire/model_config_proto.h"

ABSL_FLAG(int, batch_size, 100,
          "replay --server: examples per UpdateStreamAcked message (--delayed_clicks: most "
          "items per Feedback request); feedback --input: most items per Feedback request");
ABSL_FLAG(bool, create_model, false,
          "replay --server: create --model from the model flags before replaying");
ABSL_DECLARE_FLAG(std::string, format);     // replay_command.cc
ABSL_DECLARE_FLAG(bool, skip_bad_lines);    // replay_command.cc
ABSL_DECLARE_FLAG(uint64_t, max_examples);  // replay_command.cc
ABSL_DECLARE_FLAG(bool, delayed_clicks);    // delayed_click_replay.cc
ABSL_FLAG(uint64_t, skip_examples, 0,
          "replay --server: do not send the first N usable examples (to resume after a crash "
          "from the model's version)");

namespace clickd {
namespace {

constexpr absl::Duration kCallDeadline = absl::Seconds(10);
constexpr absl::Duration kStreamDeadline = absl::Seconds(600);
const char kCommand[] = "replay --server";

// What streaming a file produced.
struct StreamOutcome {
  absl::Status stream_error;  // the server's error, or the connection's
  absl::Status read_error;    // a malformed line or bad label (without --skip_bad_lines)
  uint64_t requests = 0;
  uint64_t acknowledged = 0;  // examples the server acknowledged
  uint64_t model_version = 0;
  std::optional<ProgressiveMetrics> metrics;  // over the acknowledged examples
  uint64_t skipped_lines = 0;
  std::vector<std::string> skipped_errors;
  double seconds = 0;
};

// Streams the usable examples of `reader` in `range` to `model` over
// UpdateStreamAcked, in batches of `batch_size`, each acknowledged before the
// next is sent. Stops at the first unusable line (unless skipping them),
// after sending the examples before it, as replay --offline learns them, and
// at the first stream error, knowing exactly what was acknowledged.
StreamOutcome StreamFile(const ClickdClient& client, ExampleReader& reader, const std::string& path,
                         const std::string& model, LossType loss, size_t batch_size,
                         ExampleRange range, absl::Duration deadline, bool skip_bad_lines) {
  StreamOutcome out;
  out.metrics.emplace(loss);
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<AckedUpdateStream> stream = client.OpenAckedUpdateStream({.timeout = deadline});
  v1::UpdateRequest batch;
  batch.set_model(model);
  batch.set_return_margins(true);
  auto send = [&]() -> bool {
    if (batch.examples_size() == 0) return true;
    absl::StatusOr<v1::UpdateAck> ack = stream->Send(batch);
    if (!ack.ok()) {
      out.stream_error = ack.status();
      return false;
    }
    ++out.requests;
    out.acknowledged += ack->applied();
    out.model_version = ack->model_version();
    for (int i = 0; i < ack->margins_size() && i < batch.examples_size(); ++i) {
      const v1::LabeledExample& e = batch.examples(i);
      out.metrics->Add(ack->margins(i), e.label(), e.has_importance() ? e.importance() : 1.0f);
    }
    batch.clear_examples();
    return true;
  };
  UsableExamples examples(reader, path, loss, range, skip_bad_lines);
  LabeledExample example;
  // Bounded by the file's length; a stalled server by the stream's deadline.
  for (bool ok = true; ok;) {
    absl::StatusOr<bool> more = examples.Next(&example);
    if (!more.ok()) {
      out.read_error = more.status();
      break;
    }
    if (!*more) break;
    ToProto(example, batch.add_examples());
    if (static_cast<size_t>(batch.examples_size()) >= batch_size) ok = send();
  }
  if (out.stream_error.ok() && send()) out.stream_error = stream->Finish();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.skipped_lines = examples.skipped_lines();
  out.skipped_errors = examples.skipped_errors();
  return out;
}

// Reports a replay that stopped early: the error and how many examples the
// server acknowledged. Returns exit code 1.
int ReportStopped(const absl::Status& error, uint64_t acknowledged) {
  const std::string code = absl::StatusCodeToString(error.code());
  std::cerr << "clickctl " << kCommand << ": " << code << ": " << error.message() << " ("
            << acknowledged << " examples acknowledged)\n";
  if (JsonFlag()) {
    std::printf("%s\n", JsonWriter()
                            .String("error", std::string(error.message()))
                            .String("code", code)
                            .Integer("acknowledged", acknowledged)
                            .Finish()
                            .c_str());
  }
  return 1;
}

void PrintResult(const v1::ModelInfo& before, const std::optional<v1::ModelInfo>& after,
                 const StreamOutcome& out) {
  const v1::ProgressiveMetrics m = MetricsToProto(out.metrics->Summary());
  const double n = static_cast<double>(m.examples());
  std::printf("%-12s %10s %9s %9s %9s %9s %11s\n", "progressive", "examples", "logloss", "auc",
              "hinge", "mistakes", "calibration");
  std::printf("%-12s %10llu %9.5f %9.5f %9.5f %9.5f %11.4f\n", "",
              static_cast<unsigned long long>(m.examples()), m.logloss(), m.auc(), m.hinge(),
              m.mistakes(), m.calibration());
  std::printf(
      "%.3f s, %.0f examples/s; %llu acknowledged in %llu messages; model %s version "
      "%llu; %llu skipped lines\n",
      out.seconds, n / out.seconds, static_cast<unsigned long long>(out.acknowledged),
      static_cast<unsigned long long>(out.requests), before.config().name().c_str(),
      static_cast<unsigned long long>(out.model_version),
      static_cast<unsigned long long>(out.skipped_lines));
  if (!JsonFlag()) return;
  JsonWriter w;
  w.String("optimizer", before.config().optimizer())
      .String("loss_function", before.config().loss());
  AddMetricsJson(m, &w);
  w.Number("seconds", out.seconds)
      .Number("examples_per_second", n / out.seconds)
      .Integer("skipped_lines", out.skipped_lines)
      .String("model", before.config().name())
      .Integer("requests", out.requests)
      .Integer("acknowledged", out.acknowledged)
      .Integer("model_version", out.model_version);
  if (after.has_value()) {
    w.Integer("coordinates", after->coordinates())
        .Integer("bytes", after->bytes())
        .Number(
            "bytes_per_coordinate",
            after->coordinates() ? static_cast<double>(after->bytes()) / after->coordinates() : 0);
  }
  std::printf("%s\n", w.Finish().c_str());
}

// The mode a refused flag needs, if one would make every flag apply: "
// without --delayed_clicks", or " without --create_model (...)"; else "".
std::string MissingModeHint(const std::set<std::string>& used, bool delayed, bool create) {
  const auto applies_with = [&](const std::set<std::string>& more) {
    std::set<std::string> all = used;
    all.insert(more.begin(), more.end());
    return CheckFlagsApply(kCommand, all).ok();
  };
  if (!delayed && applies_with(DelayedClickFlagNames())) return " without --delayed_clicks";
  if (!create && applies_with(FlagsDefinedIn("model_flags.cc"))) {
    return " without --create_model (the served model keeps its own config)";
  }
  return "";
}

// Checks the flags; returns the config to create, if --create_model.
absl::StatusOr<std::optional<v1::ModelConfig>> CheckReplayFlags() {
  std::set<std::string> used = NetworkFlagNames();
  used.insert(
      {"format", "skip_bad_lines", "batch_size", "create_model", "skip_examples", "max_examples"});
  const bool create = absl::GetFlag(FLAGS_create_model);
  const bool delayed = absl::GetFlag(FLAGS_delayed_clicks);
  if (delayed) {
    const std::set<std::string> flags = DelayedClickFlagNames();
    used.insert(flags.begin(), flags.end());
  }
  if (create) {
    const std::set<std::string> flags = FlagsDefinedIn("model_flags.cc");
    used.insert(flags.begin(), flags.end());
  }
  if (absl::Status s = CheckFlagsApply(kCommand, used); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), MissingModeHint(used, delayed, create)));
  }
  if (absl::GetFlag(FLAGS_batch_size) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_size is ", absl::GetFlag(FLAGS_batch_size), "; must be >= 1"));
  }
  if (!create) return std::nullopt;
  auto config = BuildModelConfig(ModelFlagValuesFromFlags());
  if (!config.ok()) return config.status();
  config->name = ModelFlag();
  return ModelConfigToProto(*config);
}

}  // namespace

absl::StatusOr<bool> UsableExamples::Next(LabeledExample* example) {
  while (range_.limit == 0 || usable_ < range_.skip + range_.limit) {
    absl::StatusOr<bool> more = reader_.Next(example);
    if (!more.ok() || !*more) return more;
    if (absl::Status s = CheckLabel(loss_, example->label, "label"); !s.ok()) {
      std::string message = absl::StrCat(path_, ":", reader_.line_number(), ": ", s.message());
      if (!skip_bad_lines_) return absl::InvalidArgumentError(message);
      if (skipped_errors_.size() < ExampleReader::kMaxKeptErrors) {
        skipped_errors_.push_back(std::move(message));
      }
      ++skipped_lines_;
      continue;
    }
    if (usable_++ >= range_.skip) return true;
  }
  return false;
}

std::vector<std::string> UsableExamples::skipped_errors() const {
  std::vector<std::string> errors = skipped_errors_;
  for (const std::string& e : reader_.skipped_errors()) {
    if (errors.size() < ExampleReader::kMaxKeptErrors) errors.push_back(e);
  }
  return errors;
}

void ToProto(const LabeledExample& example, v1::LabeledExample* out) {
  LabeledExampleToProto(example, out);
}

int RunServerReplayCommand(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return UsageError(kCommand, absl::InvalidArgumentError(absl::StrCat(
                                    "expected exactly one input FILE, got ", args.size())));
  }
  auto create = CheckReplayFlags();
  if (!create.ok()) return UsageError(kCommand, create.status());
  auto format = ParseInputFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) return UsageError(kCommand, format.status());
  auto delayed = DelayedClickOptionsFromFlags();
  if (!delayed.ok()) return UsageError(kCommand, delayed.status());
  auto call_deadline = DeadlineFromFlags(kCallDeadline);
  auto stream_deadline = DeadlineFromFlags(kStreamDeadline);
  if (!call_deadline.ok()) return UsageError(kCommand, call_deadline.status());
  auto client = ClientFromFlags(*call_deadline);
  if (!client.ok()) return UsageError(kCommand, client.status());

  // Open the file first: a missing file should not leave a new model behind.
  const bool skip = absl::GetFlag(FLAGS_skip_bad_lines);
  auto reader = ExampleReader::Open(args[0], *format, skip);
  if (!reader.ok()) return ReportError(kCommand, reader.status());
  auto info =
      create->has_value() ? (*client)->CreateModel(**create) : (*client)->GetModel(ModelFlag());
  // Nothing is sent before this succeeds: 0 acknowledged.
  if (!info.ok()) return ReportStopped(info.status(), 0);
  auto loss = ParseLossType(info->config().loss());
  if (!loss.ok()) return ReportError(kCommand, loss.status());

  if (absl::GetFlag(FLAGS_delayed_clicks)) {
    delayed->deadline = *stream_deadline;
    return RunDelayedClickReplay(**client, **reader, args[0], *info, *delayed);
  }
  const ExampleRange range{absl::GetFlag(FLAGS_skip_examples), absl::GetFlag(FLAGS_max_examples)};
  const StreamOutcome out = StreamFile(**client, **reader, args[0], ModelFlag(), *loss,
                                       static_cast<size_t>(absl::GetFlag(FLAGS_batch_size)), range,
                                       *stream_deadline, skip);
  for (const std::string& e : out.skipped_errors) std::cerr << "skipped: " << e << "\n";
  if (!out.stream_error.ok()) return ReportStopped(out.stream_error, out.acknowledged);
  if (!out.read_error.ok()) return ReportStopped(out.read_error, out.acknowledged);
  auto after = (*client)->GetModel(ModelFlag());
  if (!after.ok()) std::cerr << "clickctl " << kCommand << ": GetModel: " << after.status() << "\n";
  PrintResult(*info, after.ok() ? std::optional<v1::ModelInfo>(*after) : std::nullopt, out);
  return 0;
}

}  // namespace clickd
