// regret_synthetic: seed 001 Table 2 analogue (Streeter & McMahan 2010,
// section 5.2) on synthetic ads-like data with a known true model.
//
// Runs clickd's global_ogd and pc_ogd models (logistic loss, F = [-R, R]^n)
// once through a generated stream, then computes regret
//   sum_t f_t(x_t) - min_{x in F} sum_t f_t(x)
// against the best fixed model in hindsight, found two ways: as the paper
// did, by running pc_ogd through the data many times, and by a batch
// coordinate-descent solver (batch_logistic.h); the lower loss is the
// comparator (the batch solve starts from the multi-pass model; both values
// are reported). Also computes the regret at prefixes t < T, each against
// its own prefix optimum (batch solver from 0). Writes <out>.json and <out>_curve.csv and prints
// the JSON as the last line of stdout.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/seed001/batch_logistic.h"
#include "bench/seed001/synthetic_data.h"
#include "core/model/model.h"
#include "core/optim/loss.h"

ABSL_FLAG(uint64_t, examples, 100000, "T, the stream length");
ABSL_FLAG(uint64_t, seed, 1, "data seed (true model and stream)");
ABSL_FLAG(double, true_bias, -1.0, "true model: bias weight");
ABSL_FLAG(double, true_field_mean, -0.43, "true model: mean of the field weights");
ABSL_FLAG(double, true_sigma, 0.35, "true model: spread of the field weights");
ABSL_FLAG(std::vector<std::string>, vocabularies, {},
          "vocabulary size of each field (default: 10,30,100,1000,3000,10000,30000,100000)");
ABSL_FLAG(double, radius, 1.0, "feasible set [-R, R]^n");
ABSL_FLAG(double, scale, 0.1, "learning-rate scale of the main comparison (paper: 0.1)");
ABSL_FLAG(std::vector<std::string>, sensitivity_scales, {},
          "other scales to run both optimizers with (comma-separated)");
ABSL_FLAG(int, passes, 100, "passes of pc_ogd for the paper's comparator");
ABSL_FLAG(int, max_sweeps, 2000, "batch solver: maximum sweeps");
ABSL_FLAG(double, tolerance, 1e-4, "batch solver: stop when a sweep lowers the loss less");
ABSL_FLAG(bool, warm_start, true,
          "batch solver: start the full-T solve from the multi-pass pc_ogd model (prefix "
          "solves start from 0)");
ABSL_FLAG(std::vector<std::string>, checkpoints,
          std::vector<std::string>({"1000", "3000", "10000", "30000", "100000"}),
          "prefix lengths t at which to compute regret against the prefix optimum");
ABSL_FLAG(std::string, out, "", "output path prefix (<out>.json, <out>_curve.csv); empty: none");

namespace clickd::seed001 {
namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::unique_ptr<Model> MakeModel(OptimizerType type, double radius, double scale) {
  ModelConfig config;
  config.loss = LossType::kLogistic;
  config.optimizer.type = type;
  config.optimizer.pc_ogd = {radius, scale};
  config.optimizer.global_ogd = {radius, scale};
  auto model = CreateModel(config);
  if (!model.ok()) {
    std::fprintf(stderr, "regret_synthetic: %s\n", std::string(model.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(model);
}

// One online pass: the loss of each example before the model learns it.
struct OnlineRun {
  std::string optimizer;
  double scale = 0;
  double loss = 0;
  std::vector<double> losses;
  double seconds = 0;
};

OnlineRun RunOnline(const SyntheticData& data, OptimizerType type, double radius, double scale) {
  const auto start = std::chrono::steady_clock::now();
  auto model = MakeModel(type, radius, scale);
  OnlineRun run{std::string(OptimizerTypeName(type)), scale, 0, {}, 0};
  run.losses.reserve(data.examples());
  for (size_t t = 0; t < data.examples(); ++t) {
    const double margin = model->Learn(data.Example(t), data.labels[t], 1.0);
    run.losses.push_back(Loss(LossType::kLogistic, margin, data.labels[t]));
    run.loss += run.losses.back();
  }
  run.seconds = Seconds(start);
  return run;
}

// The paper's comparator: pc_ogd run through the data `passes` times (same
// order each pass); after each pass, the total loss of the fixed model.
struct MultiPass {
  std::unique_ptr<Model> model;  // after the last pass
  std::vector<double> pass_losses;
  std::vector<double> example_losses;  // at the last pass's model
  double seconds = 0;
};

MultiPass RunMultiPass(const SyntheticData& data, double radius, double scale, int passes) {
  const auto start = std::chrono::steady_clock::now();
  MultiPass result;
  result.model = MakeModel(OptimizerType::kPcOgd, radius, scale);
  Model* model = result.model.get();
  result.example_losses.resize(data.examples());
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t t = 0; t < data.examples(); ++t) model->Learn(data.Example(t), data.labels[t], 1.0);
    double total = 0;
    for (size_t t = 0; t < data.examples(); ++t) {
      result.example_losses[t] =
          Loss(LossType::kLogistic, model->Margin(data.Example(t)), data.labels[t]);
      total += result.example_losses[t];
    }
    result.pass_losses.push_back(total);
  }
  result.seconds = Seconds(start);
  return result;
}

std::vector<double> Cumulative(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  double sum = 0;
  for (size_t i = 0; i < v.size(); ++i) out[i] = sum += v[i];
  return out;
}

// Returns CSV rows of t and cumulative losses (the online runs, the
// comparator x*_T, the true model) at roughly geometric and evenly spaced t.
std::string CurveCsv(const std::vector<const OnlineRun*>& runs,
                     const std::vector<double>& comparator, const std::vector<double>& truth) {
  const size_t n = comparator.size();
  std::set<size_t> ts;
  for (double t = 1; t < n; t *= 1.03) ts.insert(static_cast<size_t>(t));
  for (size_t k = 1; k <= 500; ++k) ts.insert(std::max<size_t>(1, n * k / 500));
  std::vector<std::vector<double>> columns;
  std::string csv = "t";
  for (const OnlineRun* r : runs) {
    columns.push_back(Cumulative(r->losses));
    absl::StrAppend(&csv, ",", r->optimizer);
  }
  columns.push_back(Cumulative(comparator));
  columns.push_back(Cumulative(truth));
  absl::StrAppend(&csv, ",comparator,true_model\n");
  for (size_t t : ts) {
    absl::StrAppend(&csv, t);
    for (const auto& c : columns) absl::StrAppendFormat(&csv, ",%.6f", c[t - 1]);
    csv += "\n";
  }
  return csv;
}

std::string Num(double v) { return absl::StrFormat("%.10g", v); }

std::string BatchJson(const BatchResult& b, double seconds) {
  return absl::StrCat("{\"loss\":", Num(b.loss), ",\"sweeps\":", b.sweeps,
                      ",\"last_decrease\":", Num(b.last_decrease),
                      ",\"max_projected_gradient\":", Num(b.max_projected_gradient),
                      ",\"coordinates\":", b.coordinates, ",\"seconds\":", Num(seconds), "}");
}

std::string OnlineJson(const OnlineRun& r, double comparator, size_t examples) {
  const double regret = r.loss - comparator;
  return absl::StrCat("{\"optimizer\":\"", r.optimizer, "\",\"scale\":", Num(r.scale),
                      ",\"loss\":", Num(r.loss), ",\"regret\":", Num(regret),
                      ",\"regret_per_example\":", Num(regret / examples),
                      ",\"seconds\":", Num(r.seconds), "}");
}

std::string MultiPassJson(const MultiPass& m) {
  const size_t k = m.pass_losses.size();
  const double change = k > 1 ? m.pass_losses[k - 2] - m.pass_losses[k - 1] : 0;
  return absl::StrCat(
      "{\"passes\":", k, ",\"loss\":", Num(m.pass_losses.back()), ",\"last_change\":", Num(change),
      ",\"seconds\":", Num(m.seconds), ",\"pass_losses\":[",
      absl::StrJoin(m.pass_losses, ",", [](auto* o, double v) { absl::StrAppend(o, Num(v)); }),
      "]}");
}

SyntheticConfig ConfigFromFlags() {
  SyntheticConfig config;
  config.seed = absl::GetFlag(FLAGS_seed);
  config.examples = absl::GetFlag(FLAGS_examples);
  config.bias = absl::GetFlag(FLAGS_true_bias);
  config.field_mean = absl::GetFlag(FLAGS_true_field_mean);
  config.sigma = absl::GetFlag(FLAGS_true_sigma);
  if (const auto v = absl::GetFlag(FLAGS_vocabularies); !v.empty()) {
    config.fields.clear();
    for (const std::string& s : v)
      config.fields.push_back({"v" + s, static_cast<uint32_t>(std::stoul(s))});
  }
  return config;
}

// The best fixed model in hindsight: the lower of the batch solution and
// the paper's multi-pass pc_ogd.
struct Comparator {
  BatchResult batch;
  double batch_seconds = 0;
  MultiPass multi;
  bool batch_wins = true;
  double loss() const { return batch_wins ? batch.loss : multi.pass_losses.back(); }
  const std::vector<double>& example_losses() const {
    return batch_wins ? batch.example_losses : multi.example_losses;
  }
};

Comparator FindComparator(const SyntheticData& data, double radius, double scale,
                          const BatchOptions& batch_options) {
  Comparator c;
  c.multi = RunMultiPass(data, radius, scale, absl::GetFlag(FLAGS_passes));
  BatchOptions options = batch_options;
  if (absl::GetFlag(FLAGS_warm_start)) options.warm_start = c.multi.model.get();
  const auto start = std::chrono::steady_clock::now();
  c.batch = SolveBoxLogistic(data, data.examples(), options);
  c.batch_seconds = Seconds(start);
  c.batch_wins = c.batch.loss <= c.multi.pass_losses.back();
  return c;
}

// Regret at each prefix t against that prefix's own optimum (batch solver),
// with the cumulative losses of the two main runs and of the true model.
std::string CheckpointsJson(const SyntheticData& data, const std::vector<OnlineRun>& runs,
                            const std::vector<double>& true_losses, const Comparator& comparator,
                            const BatchOptions& batch_options) {
  std::vector<std::string> out;
  const size_t n = data.examples();
  for (const std::string& s : absl::GetFlag(FLAGS_checkpoints)) {
    const size_t t = std::stoull(s);
    if (t == 0 || t > n) continue;
    const auto start = std::chrono::steady_clock::now();
    const BatchResult prefix = t == n ? comparator.batch : SolveBoxLogistic(data, t, batch_options);
    const double seconds = t == n ? comparator.batch_seconds : Seconds(start);
    const double optimum = t == n ? comparator.loss() : prefix.loss;
    auto sum = [t](const std::vector<double>& v) {
      double total = 0;
      for (size_t i = 0; i < t; ++i) total += v[i];
      return total;
    };
    out.push_back(absl::StrCat(
        "{\"t\":", t, ",\"comparator\":", Num(optimum), ",\"", runs[0].optimizer,
        "\":", Num(sum(runs[0].losses)), ",\"", runs[1].optimizer, "\":", Num(sum(runs[1].losses)),
        ",\"true_model\":", Num(sum(true_losses)), ",\"batch\":", BatchJson(prefix, seconds), "}"));
  }
  return absl::StrCat("[", absl::StrJoin(out, ","), "]");
}

std::string DataJson(const SyntheticConfig& config, const SyntheticData& data, double true_loss) {
  double clicks = 0;
  for (float y : data.labels) clicks += y;
  std::vector<std::string> vocabularies;
  for (const FieldSpec& f : config.fields) vocabularies.push_back(absl::StrCat(f.vocabulary));
  return absl::StrCat(
      "\"examples\":", data.examples(), ",\"seed\":", config.seed, ",\"clicks\":", Num(clicks),
      ",\"ctr\":", Num(clicks / data.examples()), ",\"zipf_s\":", Num(config.zipf_s),
      ",\"vocabularies\":[", absl::StrJoin(vocabularies, ","), "],\"true_bias\":", Num(config.bias),
      ",\"true_field_mean\":", Num(config.field_mean), ",\"true_sigma\":", Num(config.sigma),
      ",\"true_model_loss\":", Num(true_loss));
}

std::vector<OnlineRun> RunAll(const SyntheticData& data, double radius, double scale) {
  std::vector<OnlineRun> runs;
  std::vector<double> scales = {scale};
  for (const std::string& s : absl::GetFlag(FLAGS_sensitivity_scales)) {
    if (std::stod(s) != scale) scales.push_back(std::stod(s));
  }
  for (double s : scales) {
    runs.push_back(RunOnline(data, OptimizerType::kGlobalOgd, radius, s));
    runs.push_back(RunOnline(data, OptimizerType::kPcOgd, radius, s));
  }
  return runs;
}

bool WriteFile(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  return std::fclose(f) == 0 && ok;
}

int Run() {
  const auto start = std::chrono::steady_clock::now();
  const SyntheticConfig config = ConfigFromFlags();
  const SyntheticData data = GenerateSynthetic(config);
  const size_t n = data.examples();
  const double radius = absl::GetFlag(FLAGS_radius);
  const double scale = absl::GetFlag(FLAGS_scale);
  std::vector<double> true_losses(n);
  double true_loss = 0;
  for (size_t t = 0; t < n; ++t) {
    true_loss += true_losses[t] = Loss(LossType::kLogistic, data.true_margins[t], data.labels[t]);
  }

  const std::vector<OnlineRun> runs = RunAll(data, radius, scale);
  const BatchOptions batch_options{radius, absl::GetFlag(FLAGS_max_sweeps),
                                   absl::GetFlag(FLAGS_tolerance)};
  const Comparator comparator = FindComparator(data, radius, scale, batch_options);
  const std::string checkpoints =
      CheckpointsJson(data, runs, true_losses, comparator, batch_options);

  std::vector<std::string> online;
  for (const OnlineRun& r : runs) online.push_back(OnlineJson(r, comparator.loss(), n));
  const std::string json =
      absl::StrCat("{", DataJson(config, data, true_loss), ",\"radius\":", Num(radius),
                   ",\"scale\":", Num(scale), ",\"comparator\":{\"loss\":", Num(comparator.loss()),
                   ",\"chosen\":\"", comparator.batch_wins ? "batch" : "multipass_pc_ogd",
                   "\",\"batch\":", BatchJson(comparator.batch, comparator.batch_seconds),
                   ",\"multipass_pc_ogd\":", MultiPassJson(comparator.multi), "},\"online\":[",
                   absl::StrJoin(online, ","), "],\"checkpoints\":", checkpoints,
                   ",\"seconds\":", Num(Seconds(start)), "}\n");

  if (const std::string out = absl::GetFlag(FLAGS_out); !out.empty()) {
    const std::string csv =
        CurveCsv({&runs[0], &runs[1]}, comparator.example_losses(), true_losses);
    if (!WriteFile(out + "_curve.csv", csv) || !WriteFile(out + ".json", json)) {
      std::fprintf(stderr, "regret_synthetic: cannot write %s.json or %s_curve.csv\n", out.c_str(),
                   out.c_str());
      return 1;
    }
  }
  std::fputs(json.c_str(), stdout);
  return 0;
}

}  // namespace
}  // namespace clickd::seed001

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::seed001::Run();
}
