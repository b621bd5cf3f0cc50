#include "replication/nats_server_version.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace clickd {
namespace {

// Splits a server URL into host and port (4222 when none is given).
std::pair<std::string, std::string> HostAndPort(std::string_view url) {
  // (URLs arrive as std::string; a view trims them in place.)
  if (size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  if (size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  if (size_t slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  if (url.starts_with('[')) {  // [::1]:4222
    const size_t close = url.find(']');
    if (close == std::string_view::npos) return {std::string(url), "4222"};
    std::string host(url.substr(1, close - 1));
    std::string_view rest = url.substr(close + 1);
    return {host, rest.starts_with(':') ? std::string(rest.substr(1)) : "4222"};
  }
  const size_t colon = url.rfind(':');
  if (colon == std::string_view::npos) return {std::string(url), "4222"};
  return {std::string(url.substr(0, colon)), std::string(url.substr(colon + 1))};
}

// Connects to host:port, waiting at most `timeout`; -1 on failure.
int ConnectWithTimeout(const std::string& host, const std::string& port,
                       std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      close(fd);
      fd = -1;
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof(error);
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

}  // namespace

std::optional<std::array<int, 3>> ParseServerVersion(const std::string& version_in) {
  std::string_view version = version_in;
  if (version.starts_with('v')) version.remove_prefix(1);
  if (size_t dash = version.find('-'); dash != std::string_view::npos) {
    version = version.substr(0, dash);
  }
  std::vector<std::string> parts = absl::StrSplit(std::string(version), '.');
  if (parts.size() != 3) return std::nullopt;
  std::array<int, 3> out{};
  for (int i = 0; i < 3; ++i) {
    if (!absl::SimpleAtoi(parts[i], &out[i]) || out[i] < 0) return std::nullopt;
  }
  return out;
}

absl::StatusOr<std::string> ReadServerVersion(const std::string& url,
                                              std::chrono::milliseconds timeout) {
  const auto [host, port] = HostAndPort(std::string_view(url));
  const int fd = ConnectWithTimeout(host, port, timeout);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot connect to ", url));
  // The server speaks first: "INFO {...}\r\n".
  std::string line;
  char buffer[4096];
  while (line.find('\n') == std::string::npos && line.size() < 65536) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) break;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  constexpr std::string_view kKey = "\"version\":\"";
  const size_t at = line.find(kKey);
  if (!line.starts_with("INFO ") || at == std::string::npos) {
    return absl::UnavailableError(absl::StrCat(url, " did not announce a NATS version"));
  }
  const size_t begin = at + kKey.size();
  const size_t end = line.find('"', begin);
  if (end == std::string::npos) {
    return absl::UnavailableError(absl::StrCat(url, " sent a malformed INFO line"));
  }
  return line.substr(begin, end - begin);
}

absl::Status CheckServerVersions(const std::string& urls, const std::string& minimum) {
  if (minimum.empty()) return absl::OkStatus();
  const std::optional<std::array<int, 3>> least = ParseServerVersion(minimum);
  if (!least.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nats_min_server_version=", minimum, " is not a version like 2.15.0"));
  }
  for (const std::string& url :
       std::vector<std::string>(absl::StrSplit(urls, ',', absl::SkipWhitespace()))) {
    auto version = ReadServerVersion(url, std::chrono::milliseconds(2000));
    if (!version.ok()) {
      std::cerr << "clickd: could not check the NATS server version of " << url << ": "
                << version.status().message() << std::endl;
      continue;
    }
    const std::optional<std::array<int, 3>> parsed = ParseServerVersion(*version);
    if (!parsed.has_value() || *parsed < *least) {
      return absl::FailedPreconditionError(
          absl::StrCat("NATS server ", url, " is version ", *version,
                       ", older than --nats_min_server_version=", minimum,
                       ": older servers can let their copies of the log diverge under faults "
                       "(docs/replication.md#what-the-guarantees-rest-on); upgrade it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace clickd
