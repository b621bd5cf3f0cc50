#include "server/flag_checks.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/quote.h"

namespace clickd {
namespace {

struct HostPort {
  absl::string_view host;
  absl::string_view port;
};

// Splits at the last ':' ([v6]:port keeps its brackets); false without one.
bool SplitHostPort(absl::string_view address, HostPort* out) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return false;
  out->host = address.substr(0, colon);
  out->port = address.substr(colon + 1);
  return true;
}

}  // namespace

absl::Status CheckFlagRange(std::string_view flag_name, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  const absl::string_view flag(flag_name.data(), flag_name.size());
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " must be in [", lo, ", ", hi, "]"));
}

absl::Status CheckListenAddress(std::string_view flag_name, std::string_view address_text) {
  const absl::string_view flag(flag_name.data(), flag_name.size());
  const absl::string_view address(address_text.data(), address_text.size());
  if (absl::StartsWith(address, "unix:")) {
    if (address.size() > 5) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=unix: names no socket path"));
  }
  HostPort hp;
  uint32_t port = 0;
  if (!SplitHostPort(address, &hp) || hp.host.empty() || hp.port.empty() ||
      !absl::SimpleAtoi(hp.port, &port) || port > 65535 ||
      hp.port.find_first_not_of("0123456789") != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", Quote(address_text),
                                                   " must be HOST:PORT with a port in 0..65535 "
                                                   "(0: any free port), [IPV6]:PORT or unix:PATH"));
  }
  const bool bracketed = absl::StartsWith(hp.host, "[");
  if (bracketed != absl::EndsWith(hp.host, "]") ||
      (!bracketed && hp.host.find(':') != absl::string_view::npos)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", Quote(address_text),
                     ": an IPv6 host must be in brackets, e.g. [::1]:50051"));
  }
  return absl::OkStatus();
}

bool IsLoopbackAddress(std::string_view address_text) {
  const absl::string_view address(address_text.data(), address_text.size());
  if (absl::StartsWith(address, "unix:")) return true;
  HostPort hp;
  if (!SplitHostPort(address, &hp)) return false;
  return absl::StartsWith(hp.host, "127.") || hp.host == "[::1]" || hp.host == "localhost";
}

}  // namespace clickd
