#include "client/clickctl/network_flags.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/clickctl/json_writer.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "network commands: the server, HOST:PORT");
ABSL_FLAG(std::string, model, "default", "network commands: the model's name");
ABSL_FLAG(std::optional<int64_t>, deadline_ms, std::nullopt,
          "network commands: deadline of each call in milliseconds (default 10000; replay "
          "--server: of the whole stream, default 600000)");
ABSL_DECLARE_FLAG(bool, json);  // replay_command.cc

namespace clickd {
namespace {

// Flags defined in clickctl's own sources (not Abseil's --help, --flagfile...).
bool IsClickctlFlag(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "clickctl/");
}

}  // namespace

std::set<std::string> FlagsDefinedIn(const std::string& file_suffix) {
  std::set<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsClickctlFlag(*flag) && absl::EndsWith(flag->Filename(), file_suffix)) {
      names.insert(std::string(name));
    }
  }
  return names;
}

std::set<std::string> NetworkFlagNames() { return {"server", "model", "deadline_ms", "json"}; }

absl::Status CheckFlagsApply(const std::string& command, const std::set<std::string>& used) {
  // Sorted, so that the message names the same flag every time.
  std::map<std::string, const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) flags[std::string(name)] = flag;
  for (const auto& [name, flag] : flags) {
    if (!IsClickctlFlag(*flag) || used.count(name) > 0) continue;
    if (flag->CurrentValue() != flag->DefaultValue()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " does not apply to clickctl ", command));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> DeadlineFromFlags(absl::Duration fallback) {
  const std::optional<int64_t> ms = absl::GetFlag(FLAGS_deadline_ms);
  if (!ms.has_value()) return fallback;
  if (*ms <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--deadline_ms is ", *ms, "; must be > 0"));
  }
  return absl::Milliseconds(*ms);
}

absl::StatusOr<std::unique_ptr<ClickdClient>> ClientFromFlags(absl::Duration deadline) {
  ClientOptions options;
  options.timeout = deadline;
  return ClickdClient::Create(ServerFlag(), options);
}

absl::Status ResolveModel(const std::string& what, std::string* model) {
  if (model->empty()) {
    *model = ModelFlag();
    return absl::OkStatus();
  }
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag("model");
  if (*model != ModelFlag() && flag->CurrentValue() != flag->DefaultValue()) {
    return absl::InvalidArgumentError(absl::StrCat("--model is \"", ModelFlag(), "\" but ", what,
                                                   " names model \"", *model, "\""));
  }
  return absl::OkStatus();
}

std::string ModelFlag() { return absl::GetFlag(FLAGS_model); }
bool JsonFlag() { return absl::GetFlag(FLAGS_json); }
std::string ServerFlag() { return absl::GetFlag(FLAGS_server); }

int ReportError(const std::string& command, const absl::Status& status) {
  const std::string code = absl::StatusCodeToString(status.code());
  std::cerr << "clickctl " << command << ": " << code << ": " << status.message() << "\n";
  if (JsonFlag()) {
    std::printf("%s\n", JsonWriter()
                            .String("error", std::string(status.message()))
                            .String("code", code)
                            .Finish()
                            .c_str());
  }
  return 1;
}

int UsageError(const std::string& command, const absl::Status& status) {
  std::cerr << "clickctl " << command << ": " << status.message() << "\n";
  return 2;
}

}  // namespace clickd
