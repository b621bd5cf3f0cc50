// clickctl: the command-line tool of clickd.
//
//   clickctl replay --offline --format=libsvm|vw|criteo [model flags] FILE
//
// Run `clickctl --help` for every flag.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "client/clickctl/replay_command.h"

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "clickctl COMMAND [flags] [args]\n"
      "commands:\n"
      "  replay --offline --format=libsvm|vw|criteo [--optimizer=...] [--json] FILE\n"
      "      train on FILE with progressive validation; see docs/clickctl.md");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() < 2) {
    std::cerr << absl::ProgramUsageMessage() << "\n";
    return 2;
  }
  const std::string command = positional[1];
  const std::vector<std::string> args(positional.begin() + 2, positional.end());
  if (command == "replay") return clickd::RunReplayCommand(args);
  std::cerr << "clickctl: unknown command \"" << command << "\"\n"
            << absl::ProgramUsageMessage() << "\n";
  return 2;
}
