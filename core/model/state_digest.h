// StateDigest: a short fingerprint of a model's learned state, XXH3-64 of
// Model::SerializeState() as 16 hex digits. `clickctl replay --json` prints
// it as model_digest and GetModel returns it on request, so that a server's
// model can be compared with an offline replay: equal digests, equal state.
#ifndef CLICKD_CORE_MODEL_STATE_DIGEST_H_
#define CLICKD_CORE_MODEL_STATE_DIGEST_H_

#include <xxhash.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "core/model/model.h"

namespace clickd {

inline std::string StateDigest(const Model& model) {
  const std::string state = model.SerializeState();
  return absl::StrFormat("%016x", XXH3_64bits(state.data(), state.size()));
}

// The same digest, of a point-in-time copy taken with
// Model::BeginStateCopy, computed in bounded steps between which `stop` is
// asked (StateCopy::FinishUnless, then every StateCopy::kStopEvery
// coordinates hashed): its first error is returned. It hashes the copy's
// bytes as SerializeState lays them out without concatenating them, so the
// memory is the copy's alone. Learners go on meanwhile: only
// BeginStateCopy needs them held off. Consumes `copy`.
absl::StatusOr<std::string> StateDigestUnless(Model::StateCopy& copy,
                                              const std::function<absl::Status()>& stop);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_STATE_DIGEST_H_
