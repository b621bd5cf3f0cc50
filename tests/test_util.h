// Shared helpers of the integration tests: running a command (a clickctl
// invocation, a browser) bounded in time, and reading the one-line JSON
// object that `clickctl --json` prints last. The clickd process itself is
// tests/server_process.h. Functions are thread-compatible: they share no
// state beyond a counter for temporary file names.
#ifndef CLICKD_TESTS_TEST_UTIL_H_
#define CLICKD_TESTS_TEST_UTIL_H_

#include <sys/types.h>

#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace clickd {
namespace testing {

struct CommandResult {
  int exit_code = -1;  // the exit status; -1 if killed by a signal or not run
  std::string out;     // stdout
  std::string err;     // stderr
};

// A `/bin/sh -c` command running in the background in its own process
// group, its stdout and stderr going to temporary files.
class BackgroundCommand {
 public:
  explicit BackgroundCommand(const std::string& command);
  ~BackgroundCommand();
  BackgroundCommand(const BackgroundCommand&) = delete;
  BackgroundCommand& operator=(const BackgroundCommand&) = delete;

  // Waits up to `timeout` for the command, then kills its process group
  // (exit_code -1); returns what it printed.
  CommandResult Finish(absl::Duration timeout);

 private:
  pid_t pid_ = -1;
  std::string out_path_;
  std::string err_path_;
};

// A file in the test's temporary directory (TEST_TMPDIR or /tmp), named
// uniquely after `name`, holding `contents`; removed when this goes.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
};

// Runs `command` with /bin/sh, killed after `timeout`.
CommandResult RunCommand(const std::string& command, absl::Duration timeout);

// The last non-empty line of `text`, without its newline.
std::string LastLine(const std::string& text);

// The last non-empty line of `text` parsed as JSON, fields in the order
// printed; a discarded value (is_discarded()) if it is not JSON.
nlohmann::ordered_json ParseLastLine(const std::string& text);

// The value at `path` in the JSON of `text`'s last line, null if missing.
// A path starting with '/' is a JSON pointer ("/predictions/1/margin"); a
// plain key is its first occurrence in printed order, at any depth.
nlohmann::ordered_json JsonAt(const std::string& text, const std::string& path);

// JsonAt as a number; NaN when missing or not a number.
double JsonNumber(const std::string& text, const std::string& path);

// JsonAt as text: a string's contents, any other value's JSON; "" if missing.
std::string JsonText(const std::string& text, const std::string& path);

}  // namespace testing
}  // namespace clickd

#endif  // CLICKD_TESTS_TEST_UTIL_H_
