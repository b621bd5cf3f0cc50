// clickctl: the command-line tool of clickd.
//
//   clickctl replay --offline --format=libsvm|vw|criteo [model flags] FILE
//   clickctl replay --server=HOST:PORT --model=NAME [--create_model] FILE
//   clickctl predict | update | feedback | models create|list|get|delete|snapshot [--server=...]
//   clickctl loadgen --method=predict|update|update_stream|health [--concurrency=N | --qps=Q]
//
// `clickctl --help` lists every flag with its default, `clickctl COMMAND --help`
// the flags of one command; docs/clickctl.md documents them.
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/clickctl/feedback_command.h"
#include "client/clickctl/loadgen.h"
#include "client/clickctl/model_flags.h"
#include "client/clickctl/network_commands.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/replay_command.h"
#include "client/clickctl/server_replay.h"
#include "core/base/command_line.h"

ABSL_DECLARE_FLAG(bool, offline);  // replay_command.cc

namespace {

// Whether --NAME (or -NAME) appears on the command line, with or without a
// value: `replay` streams to a server when --server is given, even with its
// default value.
bool OnCommandLine(int argc, char** argv, const std::string& name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) {
      arg = arg.substr(2);
    } else if (arg.rfind("-", 0) == 0) {
      arg = arg.substr(1);
    } else {
      continue;
    }
    if (arg == name || arg.rfind(name + "=", 0) == 0) return true;
  }
  return false;
}

int RunReplay(bool offline, bool server, const std::vector<std::string>& args) {
  if (offline == server) {
    std::cerr << "clickctl replay: pass --offline to train in this process or "
                 "--server=HOST:PORT to stream to a server (one of them)\n";
    return 2;
  }
  if (server) return clickd::RunServerReplayCommand(args);
  std::set<std::string> used = clickd::FlagsDefinedIn("replay_command.cc");
  const std::set<std::string> model_flags = clickd::FlagsDefinedIn("model_flags.cc");
  used.insert(model_flags.begin(), model_flags.end());
  // Offline there is no Predict to log impressions nor Feedback to label them.
  for (const std::string& name : clickd::FeedbackFlagNames()) used.erase(name);
  if (absl::Status s = clickd::CheckFlagsApply("replay --offline", used); !s.ok()) {
    return clickd::UsageError("replay", s);
  }
  return clickd::RunReplayCommand(args);
}

// --help. Abseil's own lists only the flags of a file named like the program
// (so "No flags matched" here) and exits 1; this one lists clickctl's flags,
// grouped by the commands that read them, with their defaults, and exits 0.
// Abseil's own flags (--flagfile, --fromenv, ...) stay in --helpfull.

struct Command {
  const char* name;
  const char* usage;
};

constexpr Command kCommands[] = {
    {"replay",
     "replay --offline --format=libsvm|vw|criteo [--optimizer=...] [--json] FILE\n"
     "      train on FILE in this process with progressive validation\n"
     "  replay --server=HOST:PORT [--model=NAME] [--create_model [model flags]] FILE\n"
     "      stream FILE to a served model; report the stream's progressive metrics\n"
     "  replay --server=HOST:PORT --delayed_clicks [--click_delay_mean_seconds=S\n"
     "      --time_scale=X --max_pending_clicks=N] FILE: through Predict and delayed Feedback"},
    {"predict",
     "predict [--context='ns|f1,f2:0.5 ...'] --candidates='ns|f;ns|g' | --request_json=J"},
    {"update", "update --example='ns|f ...' --label=1 [--context=...] | --request_json=J"},
    {"feedback",
     "feedback --impression_id=ID --label=1|0 [--importance=W] [--event_time_unix_micros=T]\n"
     "      | --input=FILE|- [--batch_size=N]: label impressions predict --log_impressions logged"},
    {"models", "models create [model flags | --config_json=J] | list | get | delete | snapshot"},
    {"loadgen",
     "loadgen --method=predict|update|update_stream|health [--concurrency=N | --qps=Q]\n"
     "      [--duration_s=S --warmup_s=W --max_requests=R] [--context_features=N\n"
     "      --candidates=K --candidate_features=M | --batch_size=B]: load and latency"},
};

std::string UsageMessage() {
  std::string usage = "clickctl COMMAND [flags] [args]\ncommands (see docs/clickctl.md):\n";
  for (const Command& command : kCommands) usage += std::string("  ") + command.usage + "\n";
  return usage +
         "network commands take --server (default 127.0.0.1:50051), --model (default\n"
         "\"default\"), --deadline_ms and --json\n"
         "`clickctl --help` lists every flag, `clickctl COMMAND --help` those of COMMAND";
}

// Points Abseil's --helpshort and --helppackage at clickctl's own files
// (those FlagsDefinedIn knows) too.
void SetUpUsage() {
  absl::SetProgramUsageMessage(UsageMessage());
  const auto is_own_file = [](absl::string_view file) {
    return absl::StrContains(file, "clickctl/");
  };
  absl::FlagsUsageConfig config;
  config.contains_help_flags = is_own_file;
  config.contains_helpshort_flags = is_own_file;
  config.contains_helppackage_flags = is_own_file;
  absl::SetFlagsUsageConfig(config);
}

struct FlagGroup {
  std::string title;
  std::set<std::string> flags;
};

FlagGroup ModelFlags() {
  return {
      "model flags (replay --offline, replay --server --create_model, models create;\n"
      "  unset: the optimizer's default, docs/optimizers.md)",
      clickd::FlagsDefinedIn("model_flags.cc")};
}

FlagGroup NetworkFlags() {
  return {"network flags (predict, update, feedback, models, replay --server, loadgen)",
          clickd::NetworkFlagNames()};
}

// The flags `command` reads, in the groups its --help shows; empty for an
// unknown command. The commands check the same sets (CheckFlagsApply in
// network_commands.cc, server_replay.cc, loadgen.cc and RunReplay above).
std::vector<FlagGroup> CommandFlagGroups(const std::string& command) {
  if (command == "predict") {
    return {{"predict", {"context", "candidates", "request_json", "request_id", "log_impressions"}},
            NetworkFlags()};
  }
  if (command == "update") {
    return {{"update", {"context", "example", "label", "importance", "request_json", "request_id"}},
            NetworkFlags()};
  }
  if (command == "feedback") {
    return {{"feedback", clickd::FeedbackCommandFlagNames()}, NetworkFlags()};
  }
  if (command == "models") {
    return {{"models create", {"config_json"}}, NetworkFlags(), ModelFlags()};
  }
  if (command == "replay") {
    return {{"replay --offline and --server", {"format", "skip_bad_lines", "max_examples", "json"}},
            {"replay --offline", clickd::FlagsDefinedIn("replay_command.cc")},
            {"replay --server", clickd::FlagsDefinedIn("server_replay.cc")},
            {"replay --server --delayed_clicks", clickd::FlagsDefinedIn("delayed_click_replay.cc")},
            NetworkFlags(),
            ModelFlags()};
  }
  if (command == "loadgen") {
    std::set<std::string> loadgen = clickd::FlagsDefinedIn("loadgen.cc");
    loadgen.insert({"candidates", "batch_size"});
    return {{"loadgen", loadgen}, NetworkFlags()};
  }
  return {};
}

// Prints each group's flags in Abseil's --helpfull format (name, help,
// default, and the current value if set), each flag once, in the first group
// that names it.
void PrintFlagGroups(const std::vector<FlagGroup>& groups) {
  std::set<std::string> printed;
  for (const FlagGroup& group : groups) {
    std::vector<const absl::CommandLineFlag*> flags;
    for (const std::string& name : group.flags) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag != nullptr && printed.insert(name).second) flags.push_back(flag);
    }
    if (flags.empty()) continue;
    std::cout << "\n  " << group.title << ":\n";
    // The per-flag printer of Abseil's --helpfull (Abseil 20220623 has no
    // public one), so that both lists read the same.
    for (const absl::CommandLineFlag* flag : flags) {
      absl::flags_internal::FlagHelp(std::cout, *flag);
    }
  }
}

// Prints the flags of `command`, or of every command if it is empty or
// unknown. Returns exit code 0.
int PrintHelp(const std::string& command) {
  std::vector<FlagGroup> groups = CommandFlagGroups(command);
  if (groups.empty()) {
    std::cout << "usage: " << absl::ProgramUsageMessage() << "\n";
    // The network and model flags once, first and last.
    groups = {NetworkFlags()};
    for (const Command& c : kCommands) {
      for (FlagGroup& group : CommandFlagGroups(c.name)) {
        if (group.title != ModelFlags().title) groups.push_back(std::move(group));
      }
    }
    groups.push_back(ModelFlags());
    groups.push_back({"other flags", clickd::FlagsDefinedIn(".cc")});
  } else {
    for (const Command& c : kCommands) {
      if (c.name == command) std::cout << "clickctl " << command << ":\n  " << c.usage << "\n";
    }
  }
  PrintFlagGroups(groups);
  std::cout << "\nAbseil's own flags (--flagfile, --fromenv, --helpfull, ...): clickctl "
               "--helpfull\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // As clickd does: no lock-order cycle detection on every lock gRPC takes
  // (Debian's Abseil runs it; it costs the load generator's client CPU).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  SetUpUsage();
  const bool help = clickd::TakeHelpFlag(argc, argv);
  const bool server = OnCommandLine(argc, argv, "server");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  const bool offline = absl::GetFlag(FLAGS_offline);
  const std::string command = positional.size() >= 2 ? positional[1] : "";
  if (help) return PrintHelp(command);
  if (command == "help") return PrintHelp(positional.size() >= 3 ? positional[2] : "");
  if (command.empty()) {
    std::cerr << absl::ProgramUsageMessage() << "\n";
    return 2;
  }
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "replay") return RunReplay(offline, server, args);
  if (command == "predict") return clickd::RunPredictCommand(args);
  if (command == "update") return clickd::RunUpdateCommand(args);
  if (command == "feedback") return clickd::RunFeedbackCommand(args);
  if (command == "models") return clickd::RunModelsCommand(args);
  if (command == "loadgen") return clickd::RunLoadgenCommand(args);
  std::cerr << "clickctl: unknown command \"" << command << "\"\n"
            << absl::ProgramUsageMessage() << "\n";
  return 2;
}
