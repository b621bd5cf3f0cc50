#include "client/clickctl/server_replay.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/model_config_proto.h"
#include "client/clickctl/model_flags.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/response_json.h"
#include "core/formats/example_reader.h"
#include "core/optim/loss.h"

ABSL_FLAG(int, batch_size, 100, "replay --server: examples per UpdateStream message");
ABSL_FLAG(bool, create_model, false,
          "replay --server: create --model from the model flags before replaying");
ABSL_DECLARE_FLAG(std::string, format);   // replay_command.cc
ABSL_DECLARE_FLAG(bool, skip_bad_lines);  // replay_command.cc

namespace clickd {
namespace {

constexpr absl::Duration kCallDeadline = absl::Seconds(10);
constexpr absl::Duration kStreamDeadline = absl::Seconds(600);
const char kCommand[] = "replay --server";

// What streaming a file produced.
struct StreamOutcome {
  absl::StatusOr<v1::UpdateStreamResponse> summary = absl::UnknownError("not finished");
  absl::Status read_error;  // a malformed line or bad label (without --skip_bad_lines)
  uint64_t skipped_lines = 0;
  std::vector<std::string> skipped_errors;
  double seconds = 0;
};

// Streams every usable example of `reader` to `model` in batches of
// `batch_size`. Stops at the first unusable line (unless skipping them),
// after sending the examples before it, as replay --offline learns them.
StreamOutcome StreamFile(const ClickdClient& client, ExampleReader& reader, const std::string& path,
                         const std::string& model, LossType loss, size_t batch_size,
                         absl::Duration deadline, bool skip_bad_lines) {
  StreamOutcome out;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<UpdateStreamWriter> stream = client.OpenUpdateStream({.timeout = deadline});
  v1::UpdateRequest batch;
  batch.set_model(model);
  bool broken = false;
  auto flush = [&] {
    if (batch.examples_size() > 0 && !broken) broken = !stream->Write(batch);
    batch.clear_examples();
  };
  LabeledExample example;
  // Bounded by the file's length; a stalled server by the stream's deadline.
  while (!broken) {
    absl::StatusOr<bool> more = reader.Next(&example);
    if (!more.ok()) {
      out.read_error = more.status();
      break;
    }
    if (!*more) break;
    if (absl::Status s = CheckLabel(loss, example.label, "label"); !s.ok()) {
      std::string message = absl::StrCat(path, ":", reader.line_number(), ": ", s.message());
      if (!skip_bad_lines) {
        out.read_error = absl::InvalidArgumentError(message);
        break;
      }
      if (out.skipped_errors.size() < ExampleReader::kMaxKeptErrors) {
        out.skipped_errors.push_back(std::move(message));
      }
      ++out.skipped_lines;
      continue;
    }
    ToProto(example, batch.add_examples());
    if (static_cast<size_t>(batch.examples_size()) >= batch_size) flush();
  }
  flush();
  out.summary = stream->Finish();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.skipped_lines += reader.skipped_lines();
  for (const std::string& e : reader.skipped_errors()) {
    if (out.skipped_errors.size() < ExampleReader::kMaxKeptErrors) out.skipped_errors.push_back(e);
  }
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
  const v1::UpdateStreamResponse& s = *out.summary;
  const v1::ProgressiveMetrics& m = s.metrics();
  const double n = static_cast<double>(m.examples());
  std::printf("%-12s %10s %9s %9s %9s %9s %11s\n", "progressive", "examples", "logloss", "auc",
              "hinge", "mistakes", "calibration");
  std::printf("%-12s %10llu %9.5f %9.5f %9.5f %9.5f %11.4f\n", "",
              static_cast<unsigned long long>(m.examples()), m.logloss(), m.auc(), m.hinge(),
              m.mistakes(), m.calibration());
  std::printf(
      "%.3f s, %.0f examples/s; %llu acknowledged in %llu messages; model %s version "
      "%llu; %llu skipped lines\n",
      out.seconds, n / out.seconds, static_cast<unsigned long long>(s.applied()),
      static_cast<unsigned long long>(s.requests()), before.config().name().c_str(),
      static_cast<unsigned long long>(s.model_version()),
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
      .Integer("requests", s.requests())
      .Integer("acknowledged", s.applied())
      .Integer("model_version", s.model_version());
  if (after.has_value()) {
    w.Integer("coordinates", after->coordinates())
        .Integer("bytes", after->bytes())
        .Number(
            "bytes_per_coordinate",
            after->coordinates() ? static_cast<double>(after->bytes()) / after->coordinates() : 0);
  }
  std::printf("%s\n", w.Finish().c_str());
}

// Checks the flags; returns the config to create, if --create_model.
absl::StatusOr<std::optional<v1::ModelConfig>> CheckReplayFlags() {
  std::set<std::string> used = NetworkFlagNames();
  used.insert({"format", "skip_bad_lines", "batch_size", "create_model"});
  const bool create = absl::GetFlag(FLAGS_create_model);
  const std::set<std::string> model_flags = FlagsDefinedIn("model_flags.cc");
  if (create) used.insert(model_flags.begin(), model_flags.end());
  if (absl::Status s = CheckFlagsApply(kCommand, used); !s.ok()) {
    std::set<std::string> with_model_flags = used;
    with_model_flags.insert(model_flags.begin(), model_flags.end());
    if (create || !CheckFlagsApply(kCommand, with_model_flags).ok()) return s;
    return absl::InvalidArgumentError(absl::StrCat(
        s.message(), " without --create_model (the served model keeps its own config)"));
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

uint64_t AppliedBeforeError(absl::string_view message) {
  static constexpr absl::string_view kMarker = " examples applied before it)";
  const size_t end = message.find(kMarker);
  if (end == absl::string_view::npos) return 0;
  size_t begin = end;
  while (begin > 0 && absl::ascii_isdigit(static_cast<unsigned char>(message[begin - 1]))) {
    --begin;
  }
  uint64_t applied = 0;
  return absl::SimpleAtoi(message.substr(begin, end - begin), &applied) ? applied : 0;
}

void ToProto(const LabeledExample& example, v1::LabeledExample* out) {
  out->set_label(example.label);
  if (example.importance != 1.0f) out->set_importance(example.importance);
  v1::Example* e = out->mutable_example();
  for (const Namespace& ns : example.example.namespaces) {
    v1::Namespace* n = e->add_namespaces();
    n->set_name(ns.name);
    for (const Feature& f : ns.features) {
      v1::Feature* p = n->add_features();
      if (f.has_id) {
        p->set_id(f.id);
      } else {
        p->set_name(f.name);
      }
      if (f.value != 1.0f) p->set_value(f.value);
    }
  }
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
  if (!info.ok()) return ReportError(kCommand, info.status());
  auto loss = ParseLossType(info->config().loss());
  if (!loss.ok()) return ReportError(kCommand, loss.status());

  const StreamOutcome out =
      StreamFile(**client, **reader, args[0], ModelFlag(), *loss,
                 static_cast<size_t>(absl::GetFlag(FLAGS_batch_size)), *stream_deadline, skip);
  for (const std::string& e : out.skipped_errors) std::cerr << "skipped: " << e << "\n";
  if (!out.summary.ok()) {
    return ReportStopped(out.summary.status(), AppliedBeforeError(out.summary.status().message()));
  }
  if (!out.read_error.ok()) return ReportStopped(out.read_error, out.summary->applied());
  auto after = (*client)->GetModel(ModelFlag());
  if (!after.ok()) std::cerr << "clickctl " << kCommand << ": GetModel: " << after.status() << "\n";
  PrintResult(*info, after.ok() ? std::optional<v1::ModelInfo>(*after) : std::nullopt, out);
  return 0;
}

}  // namespace clickd
