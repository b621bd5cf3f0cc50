#include "replication/log_chain.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include "absl/strings/str_format.h"
#include "core/base/coding.h"

namespace clickd {

std::string LogDigestHex(const LogDigest& digest) {
  return absl::StrFormat("%016x%016x", digest.high, digest.low);
}

LogDigest ExtendLogChain(const LogDigest& previous, uint64_t sequence, std::string_view record) {
  std::string prefix;
  prefix.reserve(24);
  coding::PutFixed64(&prefix, previous.high);
  coding::PutFixed64(&prefix, previous.low);
  coding::PutFixed64(&prefix, sequence);
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, prefix.data(), prefix.size());
  XXH3_128bits_update(&state, record.data(), record.size());
  const XXH128_hash_t hash = XXH3_128bits_digest(&state);
  return LogDigest{hash.high64, hash.low64};
}

}  // namespace clickd
