// Startup checks of clickd's numeric flags: InvalidArgument naming the
// flag, its value and its range, so that a typo such as --threads=-5 stops
// the server at once (exit 2) instead of being accepted and misbehaving
// later. (Addresses: auth::CheckAddress in server/auth/tls.h.) Pure.
#ifndef CLICKD_SERVER_FLAG_CHECKS_H_
#define CLICKD_SERVER_FLAG_CHECKS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace clickd {

// `value` must be in [lo, hi]: "--threads=-5 must be in [0, 1024]".
absl::Status CheckFlagRange(std::string_view flag, int64_t value, int64_t lo, int64_t hi);
// The same for an unsigned flag, named with the value as given however
// large: "--max_models=18446744073709551615 must be in [1, 100000]".
absl::Status CheckFlagRange(std::string_view flag, uint64_t value, uint64_t lo, uint64_t hi);

}  // namespace clickd

#endif  // CLICKD_SERVER_FLAG_CHECKS_H_
