#include "tests/test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/child_process.h"

namespace clickd {
namespace testing {
namespace {

std::string TempPath(const char* what) {
  static std::atomic<int> runs{0};
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/clickd_test_util_", getpid(), "_", runs++,
                      ".", what);
}

std::string ReadAndRemove(const std::string& path) {
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::remove(path.c_str());
  return text;
}

const nlohmann::ordered_json* FindKey(const nlohmann::ordered_json& value, const std::string& key) {
  if (value.is_object()) {
    for (const auto& [name, child] : value.items()) {
      if (name == key) return &child;
      if (const auto* found = FindKey(child, key)) return found;
    }
  } else if (value.is_array()) {
    for (const auto& child : value) {
      if (const auto* found = FindKey(child, key)) return found;
    }
  }
  return nullptr;
}

}  // namespace

BackgroundCommand::BackgroundCommand(const std::string& command)
    : out_path_(TempPath("out")), err_path_(TempPath("err")) {
  auto pid = Spawn({"/bin/sh", "-c", command},
                   {.stdout_path = out_path_, .stderr_path = err_path_, .own_process_group = true});
  pid_ = pid.ok() ? *pid : -1;
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) Finish(absl::ZeroDuration());
}

CommandResult BackgroundCommand::Finish(absl::Duration timeout) {
  CommandResult result;
  if (pid_ <= 0) return result;
  // The whole group goes: whatever the shell left behind too.
  const ExitStatus status = WaitOrKill(pid_, absl::ToChronoMilliseconds(timeout), /*group=*/true);
  result.exit_code = status.code();
  result.out = ReadAndRemove(out_path_);
  result.err = ReadAndRemove(err_path_);
  pid_ = -1;
  return result;
}

TempFile::TempFile(const std::string& name, const std::string& contents)
    : path_(TempPath(name.c_str())) {
  std::ofstream(path_) << contents;
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

CommandResult RunCommand(const std::string& command, absl::Duration timeout) {
  return BackgroundCommand(command).Finish(timeout);
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

nlohmann::ordered_json ParseLastLine(const std::string& text) {
  return nlohmann::ordered_json::parse(LastLine(text), nullptr, /*allow_exceptions=*/false);
}

nlohmann::ordered_json JsonAt(const std::string& text, const std::string& path) {
  const nlohmann::ordered_json json = ParseLastLine(text);
  if (json.is_discarded()) return nullptr;
  if (!path.empty() && path[0] == '/') {
    // json_pointer's constructor only throws on a malformed pointer, which
    // is a bug in the test.
    const nlohmann::ordered_json::json_pointer pointer(path);
    return json.contains(pointer) ? json.at(pointer) : nullptr;
  }
  const nlohmann::ordered_json* found = FindKey(json, path);
  return found != nullptr ? *found : nullptr;
}

double JsonNumber(const std::string& text, const std::string& path) {
  const nlohmann::ordered_json value = JsonAt(text, path);
  return value.is_number() ? value.get<double>() : NAN;
}

std::string JsonText(const std::string& text, const std::string& path) {
  const nlohmann::ordered_json value = JsonAt(text, path);
  if (value.is_string()) return value.get<std::string>();
  return value.is_null() ? "" : value.dump();
}

}  // namespace testing
}  // namespace clickd
