// Quote: a caller's string as it may appear in an error message.
//
// Error messages echo what the caller sent ("model \"x\" not found"), but a
// caller controls the length and the bytes: a 10 KB name echoed back made
// the status too large for gRPC's metadata and hid the real error, and
// control bytes garble logs. Quote keeps the first kQuotedPrefixBytes bytes,
// escapes anything unprintable (C-style, as absl::CHexEscape does) and says
// how long the whole string was.
#ifndef CLICKD_CORE_BASE_QUOTE_H_
#define CLICKD_CORE_BASE_QUOTE_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace clickd {

inline constexpr size_t kQuotedPrefixBytes = 64;

// "name" for short strings; "first 64 bytes..." (10240 bytes) for long ones.
inline std::string Quote(std::string_view s) {
  const absl::string_view kept(s.data(), std::min(s.size(), kQuotedPrefixBytes));
  if (s.size() <= kQuotedPrefixBytes) return absl::StrCat("\"", absl::CHexEscape(kept), "\"");
  return absl::StrCat("\"", absl::CHexEscape(kept), "...\" (", s.size(), " bytes)");
}

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_QUOTE_H_
