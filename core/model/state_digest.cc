#include "core/model/state_digest.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>

#include "core/base/coding.h"

namespace clickd {
namespace {

struct HashStateDeleter {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};

// The length of `state` as Model::SerializeState lays it out for a model
// without variants (LinearModel: round, coordinates, dense state,
// admission, factors; DenseModel: round and dense state, the others empty).
uint64_t MemberBytes(const Model::State& state) {
  return sizeof(state.round) + state.coordinates.size() + state.dense_state.size() +
         state.admission.size() + state.factors.size();
}

class Hasher {
 public:
  explicit Hasher(const std::function<absl::Status()>& stop)
      : state_(XXH3_createState()), stop_(stop) {
    if (state_ == nullptr) throw std::bad_alloc();
    XXH3_64bits_reset(state_.get());
  }

  // Hashes `bytes` in steps of kStep bytes, asking stop_ before each.
  absl::Status Add(std::string_view bytes) {
    constexpr size_t kStep = Model::StateCopy::kStopEvery * 16;
    for (size_t at = 0; at < bytes.size(); at += kStep) {
      if (absl::Status s = stop_(); !s.ok()) return s;
      const size_t n = std::min(kStep, bytes.size() - at);
      XXH3_64bits_update(state_.get(), bytes.data() + at, n);
    }
    return absl::OkStatus();
  }

  // One state without variants, as SerializeState lays it out.
  absl::Status AddMember(const Model::State& state) {
    const std::string_view round(reinterpret_cast<const char*>(&state.round), sizeof(state.round));
    for (std::string_view part :
         {round, std::string_view(state.coordinates), std::string_view(state.dense_state),
          std::string_view(state.admission), std::string_view(state.factors)}) {
      if (absl::Status s = Add(part); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string Digest() const { return absl::StrFormat("%016x", XXH3_64bits_digest(state_.get())); }

 private:
  std::unique_ptr<XXH3_state_t, HashStateDeleter> state_;
  const std::function<absl::Status()>& stop_;
};

}  // namespace

absl::StatusOr<std::string> StateDigestUnless(Model::StateCopy& copy,
                                              const std::function<absl::Status()>& stop) {
  absl::StatusOr<Model::State> state = copy.FinishUnless(stop);
  if (!state.ok()) return state.status();
  Hasher hasher(stop);
  if (absl::Status s = hasher.AddMember(*state); !s.ok()) return s;
  // VariantModel::SerializeState: each further variant's bytes after their
  // length, then the selection.
  for (const Model::State& variant : state->variants) {
    std::string length;
    coding::PutFixed64(&length, MemberBytes(variant));
    if (absl::Status s = hasher.Add(length); !s.ok()) return s;
    if (absl::Status s = hasher.AddMember(variant); !s.ok()) return s;
  }
  if (absl::Status s = hasher.Add(state->selection); !s.ok()) return s;
  return hasher.Digest();
}

}  // namespace clickd
