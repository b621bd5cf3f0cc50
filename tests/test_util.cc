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
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(127);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid_ > 0) setpgid(pid_, pid_);  // either side may run first
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0) Finish(absl::ZeroDuration());
}

CommandResult BackgroundCommand::Finish(absl::Duration timeout) {
  CommandResult result;
  if (pid_ <= 0) return result;
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done == 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  } else {
    kill(-pid_, SIGKILL);  // whatever the shell left behind
  }
  result.exit_code = done == pid_ && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadAndRemove(out_path_);
  result.err = ReadAndRemove(err_path_);
  pid_ = -1;
  return result;
}

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
