// drift_bench: learns a synthetic click stream with a known click
// probability (bench/drift/drift_log.h) with FTRL at its defaults, a grid
// of FTRL settings and the drift option (ftrl.decay) over a grid, all from
// the same examples in one pass, and prints each learner's progressive
// logloss, AUC and exact excess logloss over the Bayes-optimal predictor
// (docs/drift.md has the results; bench/drift/run.sh the command).
//
//   drift_bench --kind=abrupt --seed=1 --examples=1000000 --out=DIR
//
// Writes DIR/summary_<kind>_<seed>.csv (one line per learner) and
// DIR/curves_<kind>_<seed>.csv (excess logloss per window of --window
// examples), and with --write_vw=PATH the stream itself in Vowpal Wabbit
// text, for `clickctl replay` to check a learner's figures end to end.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/drift/drift_log.h"
#include "core/eval/metrics.h"
#include "core/model/model.h"

ABSL_FLAG(std::string, kind, "abrupt", "stationary | abrupt | gradual");
ABSL_FLAG(uint64_t, seed, 1, "data seed");
ABSL_FLAG(uint64_t, examples, 1000000, "examples in the stream");
ABSL_FLAG(uint64_t, period, 250000, "examples between changes (abrupt) or mean period (gradual)");
ABSL_FLAG(uint64_t, window, 10000, "examples per point of the curves");
ABSL_FLAG(std::string, out, "bench/out/drift", "output directory (must exist)");
ABSL_FLAG(std::string, write_vw, "", "also write the stream as VW text to this path");
ABSL_FLAG(bool, learn, true, "learn the stream (false: only write it, with --write_vw)");

namespace clickd::drift {
namespace {

struct Learner {
  std::string name;    // e.g. "ftrl a=0.1 b=1 decay=0.999"
  std::string family;  // default | ftrl_grid | decay_grid | option
  FtrlParams params;
  std::unique_ptr<Model> model;
  StreamingMetrics metrics{LossType::kLogistic};
  double excess_sum = 0;  // sum of KL(p || q)
  double window_excess = 0;
  double window_logloss = 0;
  std::chrono::steady_clock::duration time{};
};

// The drift option at the setting docs/drift.md recommends, fixed before
// any run: each coordinate forgets its squared gradients with a half-life
// of ~700 of its own updates; alpha and beta stay at FTRL's defaults.
constexpr double kOptionDecay = 0.999;

std::vector<Learner> MakeLearners() {
  std::vector<Learner> out;
  auto add = [&](std::string family, FtrlParams p) {
    Learner l;
    l.name = absl::StrCat("ftrl a=", p.alpha, " b=", p.beta, " decay=", p.decay);
    l.family = std::move(family);
    l.params = p;
    ModelConfig config;
    config.optimizer.type = OptimizerType::kFtrl;
    config.optimizer.ftrl = p;
    auto model = CreateModel(config);
    if (!model.ok()) {
      std::fprintf(stderr, "drift_bench: %s\n", model.status().ToString().c_str());
      std::exit(2);
    }
    l.model = *std::move(model);
    out.push_back(std::move(l));
  };
  add("default", FtrlParams{});
  add("option", FtrlParams{.decay = kOptionDecay});
  for (double alpha : {0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0}) {
    for (double beta : {0.1, 1.0, 10.0}) {
      add("ftrl_grid", FtrlParams{.alpha = alpha, .beta = beta});
    }
  }
  for (double decay : {0.9, 0.99, 0.999, 0.9999}) {
    for (double alpha : {0.05, 0.1, 0.2, 0.5}) {
      add("decay_grid", FtrlParams{.alpha = alpha, .decay = decay});
    }
  }
  return out;
}

double KlBernoulli(double p, double q) {
  q = std::min(std::max(q, 1e-15), 1 - 1e-15);
  return p * std::log(p / q) + (1 - p) * std::log((1 - p) / (1 - q));
}

int Run() {
  DriftLogOptions options;
  const std::string kind_name = absl::GetFlag(FLAGS_kind);
  if (!ParseDriftKind(kind_name, &options.kind)) {
    std::fprintf(stderr,
                 "drift_bench: --kind=%s is unknown; expected stationary, abrupt or gradual\n",
                 kind_name.c_str());
    return 2;
  }
  options.seed = absl::GetFlag(FLAGS_seed);
  options.period = absl::GetFlag(FLAGS_period);
  const uint64_t examples = absl::GetFlag(FLAGS_examples);
  const uint64_t window = absl::GetFlag(FLAGS_window);
  if (options.period == 0 || window == 0) {
    std::fprintf(stderr, "drift_bench: --period and --window must be > 0\n");
    return 2;
  }
  const std::string tag = absl::StrCat(kind_name, "_", options.seed);
  const std::string out_dir = absl::GetFlag(FLAGS_out);
  FILE* curves = std::fopen(absl::StrCat(out_dir, "/curves_", tag, ".csv").c_str(), "w");
  FILE* summary = std::fopen(absl::StrCat(out_dir, "/summary_", tag, ".csv").c_str(), "w");
  if (curves == nullptr || summary == nullptr) {
    std::fprintf(stderr, "drift_bench: cannot write to %s\n", out_dir.c_str());
    return 2;
  }
  FILE* vw = nullptr;
  if (!absl::GetFlag(FLAGS_write_vw).empty()) {
    vw = std::fopen(absl::GetFlag(FLAGS_write_vw).c_str(), "w");
    if (vw == nullptr) return 2;
  }
  std::fprintf(curves, "kind,seed,learner,family,examples,logloss,bayes_logloss,excess\n");

  std::vector<Learner> learners = MakeLearners();
  if (!absl::GetFlag(FLAGS_learn)) learners.resize(1);  // the hasher's owner, unused
  const bool learn = absl::GetFlag(FLAGS_learn);
  DriftLog log(options);
  const FeatureHasher& hasher = learners.front().model->hasher();
  Example example;
  example.namespaces.resize(kFields);
  for (int f = 0; f < kFields; ++f) {
    example.namespaces[f].name = absl::StrCat("f", f);
    example.namespaces[f].features.resize(1);
  }
  std::vector<HashedFeature> features;
  double bayes_sum = 0, window_bayes = 0;
  for (uint64_t t = 0; t < examples; ++t) {
    const DriftExample e = log.Next();
    for (int f = 0; f < kFields; ++f) {
      example.namespaces[f].features[0] = Feature::Named(absl::StrCat(e.values[f]));
    }
    if (vw != nullptr) {
      std::fprintf(vw, "%d", e.label ? 1 : -1);
      for (int f = 0; f < kFields; ++f) std::fprintf(vw, " |f%d %u", f, e.values[f]);
      std::fputc('\n', vw);
    }
    if (!learn) continue;
    features.clear();  // Hash appends
    hasher.Hash(example, &features);
    const double bayes = -std::log(e.label ? e.p : 1 - e.p);
    bayes_sum += bayes;
    window_bayes += bayes;
    for (Learner& l : learners) {
      const auto start = std::chrono::steady_clock::now();
      const double margin = l.model->Learn(features, e.label, 1.0);
      l.time += std::chrono::steady_clock::now() - start;
      const double q = Sigmoid(margin);
      l.metrics.Add(margin, e.label);
      const double kl = KlBernoulli(e.p, q);
      l.excess_sum += kl;
      l.window_excess += kl;
      const double qc = std::min(std::max(q, 1e-15), 1 - 1e-15);
      l.window_logloss += -std::log(e.label ? qc : 1 - qc);
    }
    if ((t + 1) % window == 0) {
      for (Learner& l : learners) {
        std::fprintf(curves, "%s,%llu,%s,%s,%llu,%.6f,%.6f,%.6f\n", kind_name.c_str(),
                     static_cast<unsigned long long>(options.seed), l.name.c_str(),
                     l.family.c_str(), static_cast<unsigned long long>(t + 1),
                     l.window_logloss / window, window_bayes / window, l.window_excess / window);
        l.window_excess = l.window_logloss = 0;
      }
      window_bayes = 0;
    }
  }
  std::fprintf(summary,
               "kind,seed,learner,family,alpha,beta,decay,examples,logloss,auc,bayes_logloss,"
               "excess,ns_per_example\n");
  for (const Learner& l : learners) {
    const MetricsSummary s = l.metrics.Summary();
    const double ns = std::chrono::duration<double, std::nano>(l.time).count() / examples;
    std::fprintf(summary, "%s,%llu,%s,%s,%g,%g,%g,%llu,%.6f,%.6f,%.6f,%.6f,%.1f\n",
                 kind_name.c_str(), static_cast<unsigned long long>(options.seed), l.name.c_str(),
                 l.family.c_str(), l.params.alpha, l.params.beta, l.params.decay,
                 static_cast<unsigned long long>(examples), s.logloss, s.auc, bayes_sum / examples,
                 l.excess_sum / examples, ns);
  }
  std::fclose(curves);
  std::fclose(summary);
  if (vw != nullptr) std::fclose(vw);
  std::printf("drift_bench: %s seed %llu: %zu learners x %llu examples\n", kind_name.c_str(),
              static_cast<unsigned long long>(options.seed), learners.size(),
              static_cast<unsigned long long>(examples));
  return 0;
}

}  // namespace
}  // namespace clickd::drift

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::drift::Run();
}
