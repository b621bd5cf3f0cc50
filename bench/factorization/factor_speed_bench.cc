// factor_speed_bench: what factors cost (docs/factorization.md, "Speed").
// For a linear FTRL model and FM and FFM beside it over --fields
// namespaces of --dim, on the same synthetic examples (--fields namespaces
// of --features_per_field features each, ids drawn from --ids per field):
//   learn    Model::Learn over examples hashed beforehand, a fresh model
//            per repetition: examples/s
//   predict  ScoreCandidates of requests with a context of
//            --context_features features and --candidates candidates of
//            --candidate_features features, hashed beforehand, on the
//            trained model: candidates/s
//   memory   the trained model's GetModel bytes per coordinate
// Each timing is the median of --repeats. One thread; nothing else in the
// timed loops.
//
//   build/release/bench/factorization/factor_speed_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/model/serving.h"

ABSL_FLAG(int, examples, 200000, "training examples");
ABSL_FLAG(int, fields, 5, "namespaces, all factorization fields");
ABSL_FLAG(int, features_per_field, 1, "features of each namespace in a training example");
ABSL_FLAG(int, ids, 10000, "distinct ids per namespace");
ABSL_FLAG(int, dim, 4, "factor dim");
ABSL_FLAG(int, requests, 200, "Predict requests timed per repetition");
ABSL_FLAG(int, candidates, 100, "candidates per request");
ABSL_FLAG(int, context_features, 20, "context features per request");
ABSL_FLAG(int, candidate_features, 20, "features per candidate");
ABSL_FLAG(int, repeats, 3, "repetitions (the median is reported)");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

std::string Field(int f) { return absl::StrCat("f", f); }

// An example of `count` features spread over the namespaces [first, last).
Example Draw(std::mt19937_64& rng, int first, int last, int count, int ids) {
  Example e;
  for (int f = first; f < last; ++f) e.namespaces.push_back({Field(f), {}});
  std::uniform_int_distribution<int> id(0, ids - 1);
  for (int i = 0; i < count; ++i) {
    e.namespaces[static_cast<size_t>(i % (last - first))].features.push_back(
        Feature::WithId(static_cast<uint64_t>(id(rng))));
  }
  return e;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

ModelConfig Config(FactorizationConfig::Kind kind) {
  ModelConfig config;
  config.factorization.kind = kind;
  if (kind != FactorizationConfig::Kind::kNone) {
    config.factorization.dim = absl::GetFlag(FLAGS_dim);
    for (int f = 0; f < absl::GetFlag(FLAGS_fields); ++f) {
      config.factorization.fields.push_back(Field(f));
    }
  }
  return config;
}

void Run(const char* name, FactorizationConfig::Kind kind) {
  const int fields = absl::GetFlag(FLAGS_fields);
  const int ids = absl::GetFlag(FLAGS_ids);
  const ModelConfig config = Config(kind);
  std::mt19937_64 rng(1);
  auto probe = CreateModel(config);
  if (!probe.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, std::string(probe.status().message()).c_str());
    std::exit(2);
  }
  // Training examples, hashed once.
  const int n = absl::GetFlag(FLAGS_examples);
  std::vector<std::vector<HashedFeature>> hashed(static_cast<size_t>(n));
  std::vector<double> labels(static_cast<size_t>(n));
  std::bernoulli_distribution click(0.1);
  for (int i = 0; i < n; ++i) {
    const Example e = Draw(rng, 0, fields, fields * absl::GetFlag(FLAGS_features_per_field), ids);
    (*probe)->hasher().Hash(e, &hashed[static_cast<size_t>(i)]);
    labels[static_cast<size_t>(i)] = click(rng) ? 1.0 : 0.0;
  }
  std::vector<double> learn_rates;
  std::unique_ptr<Model> model;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    model = *CreateModel(config);
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
      model->Learn(hashed[static_cast<size_t>(i)], labels[static_cast<size_t>(i)], 1.0);
    }
    learn_rates.push_back(n / std::chrono::duration<double>(Clock::now() - start).count());
  }
  // Requests: the context from the first half of the namespaces, the
  // candidates from the rest, hashed once.
  const int requests = absl::GetFlag(FLAGS_requests);
  const int split = std::max(1, fields / 2);
  std::vector<HashedCandidates> hashed_requests(static_cast<size_t>(requests));
  for (HashedCandidates& h : hashed_requests) {
    const Example context = Draw(rng, 0, split, absl::GetFlag(FLAGS_context_features), ids);
    model->hasher().HashContext(context, &h.context);
    std::vector<HashedFeature> part;
    for (int c = 0; c < absl::GetFlag(FLAGS_candidates); ++c) {
      const Example candidate =
          Draw(rng, split, fields, absl::GetFlag(FLAGS_candidate_features), ids);
      model->hasher().HashCandidate(h.context, candidate, &part);
      h.features.insert(h.features.end(), part.begin(), part.end());
      h.ends.push_back(h.features.size());
    }
  }
  std::vector<double> predict_rates;
  double sink = 0;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    const auto start = Clock::now();
    for (const HashedCandidates& h : hashed_requests) {
      sink += ScoreCandidates(*model, h)[0].margin;
    }
    predict_rates.push_back(static_cast<double>(requests) * absl::GetFlag(FLAGS_candidates) /
                            std::chrono::duration<double>(Clock::now() - start).count());
  }
  const ModelStats stats = model->Stats();
  std::printf(
      "%-6s learn %9.0f examples/s  predict %9.0f candidates/s  %7.1f bytes/coordinate"
      "  (%llu coordinates; checksum %.3g)\n",
      name, Median(learn_rates), Median(predict_rates),
      static_cast<double>(stats.bytes) / static_cast<double>(stats.coordinates),
      static_cast<unsigned long long>(stats.coordinates), sink);
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using Kind = clickd::FactorizationConfig::Kind;
  std::printf(
      "fields %d, dim %d, %d examples of %d features; requests of %d context + %d x %d "
      "candidate features\n",
      absl::GetFlag(FLAGS_fields), absl::GetFlag(FLAGS_dim), absl::GetFlag(FLAGS_examples),
      absl::GetFlag(FLAGS_fields) * absl::GetFlag(FLAGS_features_per_field),
      absl::GetFlag(FLAGS_context_features), absl::GetFlag(FLAGS_candidates),
      absl::GetFlag(FLAGS_candidate_features));
  clickd::Run("linear", Kind::kNone);
  clickd::Run("fm", Kind::kFm);
  clickd::Run("ffm", Kind::kFfm);
  return 0;
}
