#include "server/predict_extras.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/explain.h"
#include "wire/feature_names.h"

namespace clickd {

absl::Status CheckPredictExtras(const v1::PredictRequest& request, const Limits& limits) {
  if (request.explain_top_k() > limits.max_explain_top_k) {
    return absl::InvalidArgumentError(absl::StrCat("explain_top_k is ", request.explain_top_k(),
                                                   "; the limit is ", limits.max_explain_top_k));
  }
  return absl::OkStatus();
}

namespace {

// A Contribution's bytes besides its feature name: the key and three
// doubles (9 bytes each with their tags), the name's tag and length (6),
// the message's own tag and length (6).
constexpr uint64_t kContributionBytes = 48;
// "#" and a uint64 in decimal: how an id feature is named.
constexpr uint64_t kIdNameBytes = 21;
// A Prediction's own fields (prediction, margin, impression id, ...).
constexpr uint64_t kPredictionBytes = 64;
// A PairContribution's bytes besides its two names: two keys and a double
// (9 bytes each with their tags), two names' tags and lengths (12), the
// message's own tag and length (6).
constexpr uint64_t kPairContributionBytes = 45;

// The longest "namespace:name" among the example's features.
uint64_t LongestName(const v1::Example& example) {
  uint64_t longest = 0;
  for (const v1::Namespace& ns : example.namespaces()) {
    uint64_t name = ns.ids_size() > 0 ? kIdNameBytes : 0;
    for (const v1::Feature& f : ns.features()) {
      name = std::max<uint64_t>(name, f.has_id() ? kIdNameBytes : f.name().size());
    }
    for (const std::string& n : ns.names()) name = std::max<uint64_t>(name, n.size());
    longest = std::max<uint64_t>(longest, ns.name().size() + 1 + name);
  }
  return longest;
}

}  // namespace

absl::Status CheckExplanationSize(const v1::PredictRequest& request, const HashedCandidates& hashed,
                                  const Limits& limits) {
  const uint64_t k = request.explain_top_k();
  if (k == 0) return absl::OkStatus();
  uint64_t longest = std::max<uint64_t>(4, LongestName(request.context()));  // 4: "bias"
  for (const v1::Example& c : request.candidates()) longest = std::max(longest, LongestName(c));
  const uint64_t context = hashed.context.features.size();
  auto is_field = [](const HashedFeature& f) { return f.field != kNoField; };
  const uint64_t context_fields = static_cast<uint64_t>(
      std::count_if(hashed.context.features.begin(), hashed.context.features.end(), is_field));
  uint64_t bytes = 0;
  uint64_t pairs = 0;
  for (size_t i = 0; i < hashed.ends.size(); ++i) {
    const size_t begin = i == 0 ? 0 : hashed.ends[i - 1];
    const uint64_t own = hashed.ends[i] - begin;
    bytes += kPredictionBytes + std::min(k, own + context) * (kContributionBytes + longest);
    // A factorization model explains pairs of field features too (at most
    // n (n - 1) / 2 of them, n its field features with the context's).
    const uint64_t n = context_fields + static_cast<uint64_t>(std::count_if(
                                            hashed.features.begin() + begin,
                                            hashed.features.begin() + hashed.ends[i], is_field));
    const uint64_t candidate_pairs = n < 2 ? 0 : n * (n - 1) / 2;
    pairs += candidate_pairs;
    bytes += std::min(k, candidate_pairs) * (kPairContributionBytes + 2 * longest);
  }
  if (pairs > kMaxExplainedPairs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "explain_top_k on a factorization model: ", hashed.ends.size(), " candidates have up to ",
        pairs, " pairs of field features to rank; the limit is ", kMaxExplainedPairs,
        ": ask for fewer candidates or explain without factors' pairs"));
  }
  const uint64_t limit = static_cast<uint64_t>(limits.max_message_bytes);
  if (bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "explain_top_k ", k, " for ", hashed.ends.size(), " candidates (feature names up to ",
      longest, " bytes) could make a response of ", bytes,
      " bytes; the limit is --max_message_bytes ", limit,
      ": ask for fewer candidates or a smaller explain_top_k"));
}

namespace {

// Candidate i's features as learning takes them: its own and its crosses,
// then the context's, merged (what Model::Margin sums for it, in total).
void CandidateFeatures(const HashedCandidates& hashed, size_t i, std::vector<HashedFeature>* out) {
  const size_t begin = i == 0 ? 0 : hashed.ends[i - 1];
  out->assign(hashed.features.begin() + begin, hashed.features.begin() + hashed.ends[i]);
  out->insert(out->end(), hashed.context.features.begin(), hashed.context.features.end());
  MergeDuplicates(out);
}

// `shared_names`: the bias's and the context's, named once per request;
// `names` gets candidate i's own.
void Explain(const Model& scorer, const v1::PredictRequest& request, size_t i,
             absl::Span<const HashedFeature> features, const FeatureNames& shared_names,
             FeatureNames* names, v1::Prediction* prediction) {
  std::vector<double> weights(features.size());
  scorer.Weights(features, absl::MakeSpan(weights));
  auto top = TopContributions(features, weights, request.explain_top_k());
  if (!top.ok()) return;  // sizes match by construction
  names->clear();
  AddFeatureNames(scorer.hasher(), request.candidates(static_cast<int>(i)), names);
  for (const Contribution& c : *top) {
    v1::Contribution* out = prediction->add_explanation();
    if (auto it = names->find(c.key); it != names->end()) {
      out->set_feature(it->second);
    } else if (auto shared = shared_names.find(c.key); shared != shared_names.end()) {
      out->set_feature(shared->second);
    }
    out->set_key(c.key);
    out->set_value(c.value);
    out->set_weight(c.weight);
    out->set_contribution(c.contribution);
  }
  // A factorization model's pairs (CheckExplanationSize bounded them).
  std::vector<PairContribution> pairs;
  scorer.FactorPairs(features, &pairs);
  KeepTopPairs(request.explain_top_k(), &pairs);
  auto name_of = [&](uint64_t key) -> const std::string* {
    if (auto it = names->find(key); it != names->end()) return &it->second;
    if (auto it = shared_names.find(key); it != shared_names.end()) return &it->second;
    return nullptr;
  };
  for (const PairContribution& pair : pairs) {
    v1::PairContribution* out = prediction->add_pair_explanation();
    if (const std::string* name = name_of(pair.key_a)) out->set_feature_a(*name);
    if (const std::string* name = name_of(pair.key_b)) out->set_feature_b(*name);
    out->set_key_a(pair.key_a);
    out->set_key_b(pair.key_b);
    out->set_contribution(pair.contribution);
  }
}

}  // namespace

void AddPredictExtras(const ServedModel& served, const Model& scorer,
                      const v1::PredictRequest& request, const HashedCandidates& hashed,
                      absl::Span<const CandidateScore> scores, v1::PredictResponse* response) {
  const size_t n = scores.size();
  if (request.uncertainty() || request.explain_top_k() > 0) {
    std::vector<HashedFeature> features;
    FeatureNames shared_names, names;
    if (request.explain_top_k() > 0) {
      AddBiasName(scorer.hasher(), &shared_names);
      AddFeatureNames(scorer.hasher(), request.context(), &shared_names);
    }
    for (size_t i = 0; i < n; ++i) {
      CandidateFeatures(hashed, i, &features);
      v1::Prediction* prediction = response->mutable_predictions(static_cast<int>(i));
      if (request.uncertainty()) prediction->set_uncertainty(scorer.Uncertainty(features));
      if (request.explain_top_k() > 0) {
        Explain(scorer, request, i, features, shared_names, &names, prediction);
      }
    }
  }
  if (served.calibrated()) {
    std::vector<double> p(n), calibrated(n);
    for (size_t i = 0; i < n; ++i) p[i] = scores[i].prediction;
    served.Calibrate(p, absl::MakeSpan(calibrated));
    for (size_t i = 0; i < n; ++i) {
      response->mutable_predictions(static_cast<int>(i))->set_calibrated_prediction(calibrated[i]);
    }
  }
}

}  // namespace clickd
