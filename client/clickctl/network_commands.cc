#include "client/clickctl/network_commands.h"

#include <cstdio>
#include <optional>
#include <set>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/clickctl/json_writer.h"
#include "client/clickctl/model_flags.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/request_text.h"
#include "client/clickctl/response_json.h"
#include "wire/model_config_proto.h"

ABSL_FLAG(std::string, context, "",
          "predict, update: the shared context, e.g. 'user|country=FR,age:30 page|home'");
ABSL_FLAG(std::string, candidates, "",
          "predict: candidates separated by ';', e.g. 'ad|#7,brand=x; ad|#8'");
ABSL_FLAG(std::string, example, "", "update: the example learned (with --context: a candidate)");
ABSL_FLAG(std::optional<double>, label, std::nullopt,
          "update: the example's label; feedback: the impression's (1: a click, 0: not)");
ABSL_FLAG(std::optional<double>, importance, std::nullopt,
          "update: the example's importance weight, feedback: the label's (default 1)");
ABSL_FLAG(std::string, request_json, "",
          "predict, update: the whole request in protobuf JSON, inline ({...}) or a file");
ABSL_FLAG(std::string, request_id, "", "predict, update, feedback: the request id (echoed back)");
ABSL_FLAG(bool, log_impressions, false,
          "predict: log each candidate as an impression of the model's impression-to-click "
          "loop and print its impression_id (a decimal string), for `clickctl feedback`");
ABSL_FLAG(std::string, config_json, "",
          "models create: the ModelConfig in protobuf JSON, inline ({...}) or a file");

namespace clickd {
namespace {

constexpr absl::Duration kCallDeadline = absl::Seconds(10);

std::set<std::string> With(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// The client for a command whose flags have been checked.
absl::StatusOr<std::unique_ptr<ClickdClient>> Client() {
  auto deadline = DeadlineFromFlags(kCallDeadline);
  if (!deadline.ok()) return deadline.status();
  return ClientFromFlags(*deadline);
}

absl::StatusOr<v1::PredictRequest> PredictRequestFromFlags() {
  v1::PredictRequest request;
  const std::string json = absl::GetFlag(FLAGS_request_json);
  const std::string context = absl::GetFlag(FLAGS_context);
  const std::string candidates = absl::GetFlag(FLAGS_candidates);
  if (!json.empty()) {
    if (!context.empty() || !candidates.empty()) {
      return absl::InvalidArgumentError(
          "--request_json excludes --context and --candidates; give one or the other");
    }
    if (absl::Status s = ParseJsonMessage(json, "--request_json", &request); !s.ok()) return s;
    if (absl::Status s = ResolveModel("--request_json", request.mutable_model()); !s.ok()) {
      return s;
    }
  } else {
    if (candidates.empty()) {
      return absl::InvalidArgumentError(
          "give --candidates (and optionally --context), or "
          "--request_json");
    }
    auto ctx = ParseExampleText(context, "--context");
    if (!ctx.ok()) return ctx.status();
    *request.mutable_context() = *std::move(ctx);
    auto examples = ParseCandidatesText(candidates, "--candidates");
    if (!examples.ok()) return examples.status();
    for (v1::Example& e : *examples) *request.add_candidates() = std::move(e);
    request.set_model(ModelFlag());
  }
  if (const std::string id = absl::GetFlag(FLAGS_request_id); !id.empty()) {
    request.set_request_id(id);
  }
  if (absl::GetFlag(FLAGS_log_impressions)) request.set_log_impressions(true);
  return request;
}

absl::StatusOr<v1::UpdateRequest> UpdateRequestFromFlags() {
  v1::UpdateRequest request;
  const std::string json = absl::GetFlag(FLAGS_request_json);
  const std::string context = absl::GetFlag(FLAGS_context);
  const std::string example = absl::GetFlag(FLAGS_example);
  const std::optional<double> label = absl::GetFlag(FLAGS_label);
  const std::optional<double> importance = absl::GetFlag(FLAGS_importance);
  if (!json.empty()) {
    if (!context.empty() || !example.empty() || label.has_value() || importance.has_value()) {
      return absl::InvalidArgumentError(
          "--request_json excludes --context, --example, --label and --importance");
    }
    if (absl::Status s = ParseJsonMessage(json, "--request_json", &request); !s.ok()) return s;
    if (absl::Status s = ResolveModel("--request_json", request.mutable_model()); !s.ok()) {
      return s;
    }
  } else {
    if (example.empty() || !label.has_value()) {
      return absl::InvalidArgumentError(
          "give --example and --label (and optionally --context, --importance), or "
          "--request_json");
    }
    v1::LabeledExample labeled;
    auto parsed = ParseExampleText(example, "--example");
    if (!parsed.ok()) return parsed.status();
    *labeled.mutable_example() = *std::move(parsed);
    labeled.set_label(static_cast<float>(*label));
    if (importance.has_value()) labeled.set_importance(static_cast<float>(*importance));
    if (context.empty()) {
      *request.add_examples() = std::move(labeled);
    } else {
      v1::Impression* impression = request.add_impressions();
      auto ctx = ParseExampleText(context, "--context");
      if (!ctx.ok()) return ctx.status();
      *impression->mutable_context() = *std::move(ctx);
      *impression->add_candidates() = std::move(labeled);
    }
    request.set_model(ModelFlag());
  }
  if (const std::string id = absl::GetFlag(FLAGS_request_id); !id.empty()) {
    request.set_request_id(id);
  }
  request.set_return_margins(true);
  return request;
}

void PrintPrediction(const v1::PredictRequest& request, const v1::PredictResponse& response) {
  if (JsonFlag()) {
    std::vector<std::string> predictions;
    for (const v1::Prediction& p : response.predictions()) {
      JsonWriter w;
      w.FloatValued("prediction", p.prediction()).FloatValued("margin", p.margin());
      // A string: a uint64 above 2^53 does not survive a JSON reader's double.
      if (request.log_impressions()) w.String("impression_id", absl::StrCat(p.impression_id()));
      predictions.push_back(w.Finish());
    }
    std::printf("%s\n", JsonWriter()
                            .String("model", request.model())
                            .String("request_id", response.request_id())
                            .Integer("model_version", response.model_version())
                            .Object("predictions", JsonArray(predictions))
                            .Finish()
                            .c_str());
    return;
  }
  std::printf("model %s, version %llu\n%-9s %12s %12s%s\n", request.model().c_str(),
              static_cast<unsigned long long>(response.model_version()), "candidate", "prediction",
              "margin", request.log_impressions() ? "  impression_id" : "");
  for (int i = 0; i < response.predictions_size(); ++i) {
    const v1::Prediction& p = response.predictions(i);
    const std::string id = request.log_impressions() ? absl::StrCat("  ", p.impression_id()) : "";
    std::printf("%-9d %12.6g %12.6g%s\n", i, p.prediction(), p.margin(), id.c_str());
  }
}

void PrintUpdate(const v1::UpdateRequest& request, const v1::UpdateResponse& response) {
  if (JsonFlag()) {
    std::vector<std::string> margins;
    for (double m : response.margins()) {
      margins.push_back(JsonNumber(JsonWriter::ShortestFloatForm(m)));
    }
    std::printf("%s\n", JsonWriter()
                            .String("model", request.model())
                            .String("request_id", response.request_id())
                            .Integer("applied", response.applied())
                            .Integer("model_version", response.model_version())
                            .Object("margins", JsonArray(margins))
                            .Finish()
                            .c_str());
    return;
  }
  std::printf("model %s: applied %llu examples, version %llu; pre-update margins: %s\n",
              request.model().c_str(), static_cast<unsigned long long>(response.applied()),
              static_cast<unsigned long long>(response.model_version()),
              absl::StrJoin(response.margins(), " ").c_str());
}

void PrintModel(const v1::ModelInfo& info) {
  if (JsonFlag()) {
    std::printf("%s\n", ModelInfoJson(info).c_str());
  } else {
    std::printf("%s", ModelTable({info}).c_str());
  }
}

// models create: from the model flags or --config_json.
absl::StatusOr<v1::ModelConfig> ConfigFromFlags() {
  v1::ModelConfig config;
  if (const std::string json = absl::GetFlag(FLAGS_config_json); !json.empty()) {
    if (absl::Status s = CheckFlagsApply("models create --config_json",
                                         With(NetworkFlagNames(), {"config_json"}));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ParseJsonMessage(json, "--config_json", &config); !s.ok()) return s;
    if (absl::Status s = ResolveModel("--config_json", config.mutable_name()); !s.ok()) return s;
    return config;
  }
  auto core_config = BuildModelConfig(ModelFlagValuesFromFlags());
  if (!core_config.ok()) return core_config.status();
  core_config->name = ModelFlag();
  return ModelConfigToProto(*core_config);
}

void PrintSnapshot(const std::string& model, const v1::SnapshotModelResponse& r) {
  if (JsonFlag()) {
    std::printf("%s\n", JsonWriter()
                            .String("model", model)
                            .Integer("sequence", r.sequence())
                            .Integer("coordinates", r.coordinates())
                            .Integer("bytes", r.bytes())
                            .Number("seconds", r.seconds())
                            .Finish()
                            .c_str());
  } else {
    std::printf(
        "snapshot of model %s at update-log sequence %llu: %llu coordinates, %llu bytes, "
        "%.3f s\n",
        model.c_str(), static_cast<unsigned long long>(r.sequence()),
        static_cast<unsigned long long>(r.coordinates()),
        static_cast<unsigned long long>(r.bytes()), r.seconds());
  }
}

int RunModelsSubcommand(const std::string& sub, const std::string& command) {
  std::set<std::string> used = NetworkFlagNames();
  if (sub == "create") used = With(With(used, FlagsDefinedIn("model_flags.cc")), {"config_json"});
  if (sub == "list") used.erase("model");
  if (absl::Status s = CheckFlagsApply(command, used); !s.ok()) return UsageError(command, s);
  std::optional<v1::ModelConfig> config;
  if (sub == "create") {
    auto c = ConfigFromFlags();
    if (!c.ok()) return UsageError(command, c.status());
    config = *std::move(c);
  }
  auto client = Client();
  if (!client.ok()) return UsageError(command, client.status());
  if (sub == "create" || sub == "get") {
    auto info =
        config.has_value() ? (*client)->CreateModel(*config) : (*client)->GetModel(ModelFlag());
    if (!info.ok()) return ReportError(command, info.status());
    PrintModel(*info);
  } else if (sub == "list") {
    auto models = (*client)->ListModels();
    if (!models.ok()) return ReportError(command, models.status());
    if (JsonFlag()) {
      std::vector<std::string> items;
      for (const v1::ModelInfo& m : *models) items.push_back(ModelInfoJson(m));
      std::printf("%s\n", JsonWriter().Object("models", JsonArray(items)).Finish().c_str());
    } else {
      std::printf("%s", ModelTable(*models).c_str());
    }
  } else if (sub == "snapshot") {
    auto snapshot = (*client)->SnapshotModel(ModelFlag());
    if (!snapshot.ok()) return ReportError(command, snapshot.status());
    PrintSnapshot(ModelFlag(), *snapshot);
  } else {
    if (absl::Status s = (*client)->DeleteModel(ModelFlag()); !s.ok()) {
      return ReportError(command, s);
    }
    if (JsonFlag()) {
      std::printf("%s\n", JsonWriter().String("deleted", ModelFlag()).Finish().c_str());
    } else {
      std::printf("deleted model %s\n", ModelFlag().c_str());
    }
  }
  return 0;
}

}  // namespace

int RunPredictCommand(const std::vector<std::string>& args) {
  const std::string command = "predict";
  if (!args.empty()) {
    return UsageError(command, absl::InvalidArgumentError(absl::StrCat(
                                   "unexpected argument \"", args[0], "\"; quote feature lists")));
  }
  const std::set<std::string> used =
      With(NetworkFlagNames(),
           {"context", "candidates", "request_json", "request_id", "log_impressions"});
  if (absl::Status s = CheckFlagsApply(command, used); !s.ok()) return UsageError(command, s);
  auto request = PredictRequestFromFlags();
  if (!request.ok()) return UsageError(command, request.status());
  auto client = Client();
  if (!client.ok()) return UsageError(command, client.status());
  auto response = (*client)->Predict(*request);
  if (!response.ok()) return ReportError(command, response.status());
  PrintPrediction(*request, *response);
  return 0;
}

int RunUpdateCommand(const std::vector<std::string>& args) {
  const std::string command = "update";
  if (!args.empty()) {
    return UsageError(command, absl::InvalidArgumentError(absl::StrCat(
                                   "unexpected argument \"", args[0], "\"; quote feature lists")));
  }
  const std::set<std::string> used =
      With(NetworkFlagNames(),
           {"context", "example", "label", "importance", "request_json", "request_id"});
  if (absl::Status s = CheckFlagsApply(command, used); !s.ok()) return UsageError(command, s);
  auto request = UpdateRequestFromFlags();
  if (!request.ok()) return UsageError(command, request.status());
  auto client = Client();
  if (!client.ok()) return UsageError(command, client.status());
  auto response = (*client)->Update(*request);
  if (!response.ok()) return ReportError(command, response.status());
  PrintUpdate(*request, *response);
  return 0;
}

int RunModelsCommand(const std::vector<std::string>& args) {
  static const std::set<std::string> kSubcommands = {"create", "list", "get", "delete", "snapshot"};
  if (args.size() != 1 || kSubcommands.count(args[0]) == 0) {
    return UsageError("models", absl::InvalidArgumentError(
                                    "expected one of: models create|list|get|delete|snapshot"));
  }
  return RunModelsSubcommand(args[0], "models " + args[0]);
}

}  // namespace clickd
