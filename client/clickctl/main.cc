// clickctl: the command-line tool of clickd.
//
//   clickctl replay --offline --format=libsvm|vw|criteo [model flags] FILE
//   clickctl replay --server=HOST:PORT --model=NAME [--create_model] FILE
//   clickctl predict | update | models create|list|get|delete|snapshot [--server=...]
//   clickctl loadgen --method=predict|update|update_stream|health [--concurrency=N | --qps=Q]
//
// Run `clickctl --help` for every flag; docs/clickctl.md documents them.
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "client/clickctl/loadgen.h"
#include "client/clickctl/network_commands.h"
#include "client/clickctl/network_flags.h"
#include "client/clickctl/replay_command.h"
#include "client/clickctl/server_replay.h"

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
  if (absl::Status s = clickd::CheckFlagsApply("replay --offline", used); !s.ok()) {
    return clickd::UsageError("replay", s);
  }
  return clickd::RunReplayCommand(args);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "clickctl COMMAND [flags] [args]\n"
      "commands (see docs/clickctl.md):\n"
      "  replay --offline --format=libsvm|vw|criteo [--optimizer=...] [--json] FILE\n"
      "      train on FILE in this process with progressive validation\n"
      "  replay --server=HOST:PORT [--model=NAME] [--create_model [model flags]] FILE\n"
      "      stream FILE to a served model; report the stream's progressive metrics\n"
      "  predict [--context='ns|f1,f2:0.5 ...'] --candidates='ns|f;ns|g' | --request_json=J\n"
      "  update --example='ns|f ...' --label=1 [--context=...] | --request_json=J\n"
      "  models create [model flags | --config_json=J] | list | get | delete | snapshot\n"
      "  loadgen --method=predict|update|update_stream|health [--concurrency=N | --qps=Q]\n"
      "      [--duration_s=S --warmup_s=W --max_requests=R] [--context_features=N\n"
      "      --candidates=K --candidate_features=M | --batch_size=B]: load and latency\n"
      "network commands take --server (default 127.0.0.1:50051), --model (default\n"
      "\"default\"), --deadline_ms and --json");
  const bool server = OnCommandLine(argc, argv, "server");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  const bool offline = absl::GetFlag(FLAGS_offline);
  if (positional.size() < 2) {
    std::cerr << absl::ProgramUsageMessage() << "\n";
    return 2;
  }
  const std::string command = positional[1];
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "replay") return RunReplay(offline, server, args);
  if (command == "predict") return clickd::RunPredictCommand(args);
  if (command == "update") return clickd::RunUpdateCommand(args);
  if (command == "models") return clickd::RunModelsCommand(args);
  if (command == "loadgen") return clickd::RunLoadgenCommand(args);
  std::cerr << "clickctl: unknown command \"" << command << "\"\n"
            << absl::ProgramUsageMessage() << "\n";
  return 2;
}
