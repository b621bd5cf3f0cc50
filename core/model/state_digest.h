// StateDigest: a short fingerprint of a model's learned state, XXH3-64 of
// Model::SerializeState() as 16 hex digits. `clickctl replay --json` prints
// it as model_digest and GetModel returns it on request, so that a server's
// model can be compared with an offline replay: equal digests, equal state.
#ifndef CLICKD_CORE_MODEL_STATE_DIGEST_H_
#define CLICKD_CORE_MODEL_STATE_DIGEST_H_

#include <xxhash.h>

#include <string>

#include "absl/strings/str_format.h"
#include "core/model/model.h"

namespace clickd {

inline std::string StateDigest(const Model& model) {
  const std::string state = model.SerializeState();
  return absl::StrFormat("%016x", XXH3_64bits(state.data(), state.size()));
}

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_STATE_DIGEST_H_
