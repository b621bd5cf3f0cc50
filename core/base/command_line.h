// Command-line helpers shared by the binaries (clickd, clickctl).
#ifndef CLICKD_CORE_BASE_COMMAND_LINE_H_
#define CLICKD_CORE_BASE_COMMAND_LINE_H_

#include <string_view>

namespace clickd {

// Removes every --help, -help and -h before a "--" from argv (keeping
// argv[argc] == nullptr); returns whether there was one. The binaries print
// their own flag list for it: Abseil's --help lists only the flags of a file
// named like the program.
inline bool TakeHelpFlag(int& argc, char** argv) {
  bool help = false;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      while (i < argc) argv[kept++] = argv[i++];
      break;
    }
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      help = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return help;
}

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_COMMAND_LINE_H_
