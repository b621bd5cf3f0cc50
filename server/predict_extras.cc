#include "server/predict_extras.h"

#include <cmath>

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
