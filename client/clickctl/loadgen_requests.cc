#include "client/clickctl/loadgen_requests.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"

namespace clickd {

// SplitMix64 (Steele, Lea and Flood 2014): tiny, fast, and the same
// sequence everywhere, unlike the standard library's distributions.
class SyntheticRequests::Rng {
 public:
  explicit Rng(uint64_t state) : state_(state) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

namespace {

// The starting state of request stream `stream`: hashed, so that the streams
// of nearby indices and seeds do not overlap.
uint64_t StreamState(uint64_t seed, uint64_t stream) {
  uint64_t z = seed * 0xd1342543de82ef95ULL + stream * 0x9e3779b97f4a7c15ULL + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

absl::StatusOr<WireForm> ParseWireForm(const std::string& text) {
  for (WireForm form : {WireForm::kFeatures, WireForm::kPacked, WireForm::kKeys}) {
    if (text == WireFormName(form)) return form;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--wire is \"", text, "\"; want features, packed or keys"));
}

const char* WireFormName(WireForm form) {
  switch (form) {
    case WireForm::kFeatures:
      return "features";
    case WireForm::kPacked:
      return "packed";
    case WireForm::kKeys:
      return "keys";
  }
  return "features";
}

SyntheticRequests::SyntheticRequests(RequestShape shape, uint64_t seed)
    : shape_(shape), seed_(seed), cdf_(kVocabulary) {
  double total = 0;
  for (int v = 1; v <= kVocabulary; ++v) {
    total += std::pow(static_cast<double>(v), -kZipfExponent);
    cdf_[v - 1] = total;
  }
  for (double& c : cdf_) c /= total;
  cdf_.back() = 1.0;
}

int SyntheticRequests::ZipfValue(double u) const {
  return static_cast<int>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin()) + 1;
}

void SyntheticRequests::FillExample(Rng& rng, const char* ns, char prefix, int features,
                                    v1::Example* out) const {
  if (features <= 0) return;
  v1::Namespace* n = out->add_namespaces();
  n->set_name(ns);
  const KeyHasher hasher(shape_.hashing_seed);
  const uint64_t ns_hash = shape_.wire == WireForm::kKeys ? hasher.NamespaceHash(ns) : 0;
  for (int j = 0; j < features; ++j) {
    const int value = ZipfValue(rng.Uniform());
    if (shape_.feature_ids) {
      const uint64_t id = (static_cast<uint64_t>(j) << 32) | static_cast<uint64_t>(value);
      switch (shape_.wire) {
        case WireForm::kFeatures:
          n->add_features()->set_id(id);
          break;
        case WireForm::kPacked:
          n->add_ids(id);
          break;
        case WireForm::kKeys:
          n->add_keys(KeyHasher::IdKey(ns_hash, id));
          break;
      }
      continue;
    }
    std::string name(1, prefix);
    name += std::to_string(j);
    name += '=';
    name += std::to_string(value);
    switch (shape_.wire) {
      case WireForm::kFeatures:
        n->add_features()->set_name(std::move(name));
        break;
      case WireForm::kPacked:
        n->add_names(std::move(name));
        break;
      case WireForm::kKeys:
        n->add_keys(KeyHasher::NamedKey(ns_hash, name));
        break;
    }
  }
}

v1::PredictRequest SyntheticRequests::Predict(const std::string& model, uint64_t i) const {
  // Even streams for Predict, odd for Update.
  Rng rng(StreamState(seed_, 2 * i));
  v1::PredictRequest request;
  request.set_model(model);
  request.set_log_impressions(shape_.log_impressions);
  FillExample(rng, "user", 'u', shape_.context_features, request.mutable_context());
  request.mutable_candidates()->Reserve(shape_.candidates);
  for (int c = 0; c < shape_.candidates; ++c) {
    FillExample(rng, "ad", 'a', shape_.candidate_features, request.add_candidates());
  }
  return request;
}

v1::UpdateRequest SyntheticRequests::Update(const std::string& model, uint64_t i) const {
  Rng rng(StreamState(seed_, 2 * i + 1));
  v1::UpdateRequest request;
  request.set_model(model);
  v1::Impression* impression = nullptr;
  if (shape_.context_features > 0) {
    impression = request.add_impressions();
    FillExample(rng, "user", 'u', shape_.context_features, impression->mutable_context());
  }
  for (int c = 0; c < shape_.candidates; ++c) {
    v1::LabeledExample* example =
        impression != nullptr ? impression->add_candidates() : request.add_examples();
    FillExample(rng, "ad", 'a', shape_.candidate_features, example->mutable_example());
    example->set_label(rng.Uniform() < kPositiveRate ? 1.0f : 0.0f);
  }
  return request;
}

uint64_t PoolSize(uint64_t features_per_request) {
  return std::clamp<uint64_t>((uint64_t{1} << 20) / std::max<uint64_t>(features_per_request, 1), 1,
                              1024);
}

}  // namespace clickd
