// Startup checks of clickd's flags. Each returns InvalidArgument naming the
// flag, its value and what it may be, so that a typo such as
// --address=127.0.0.1:99999 or --threads=-5 stops the server at once (exit 2)
// instead of being accepted and misbehaving later. Pure functions.
#ifndef CLICKD_SERVER_FLAG_CHECKS_H_
#define CLICKD_SERVER_FLAG_CHECKS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace clickd {

// `value` must be in [lo, hi]: "--threads=-5 must be in [0, 1024]".
absl::Status CheckFlagRange(std::string_view flag, int64_t value, int64_t lo, int64_t hi);

// A gRPC listening address: HOST:PORT, [IPV6]:PORT or unix:PATH, with a port
// in 0..65535 (0: any free port) and a non-empty host.
absl::Status CheckListenAddress(std::string_view flag, std::string_view address);

// True for an address gRPC would only accept loopback connections on
// (127.0.0.0/8, [::1], localhost, unix sockets).
bool IsLoopbackAddress(std::string_view address);

}  // namespace clickd

#endif  // CLICKD_SERVER_FLAG_CHECKS_H_
