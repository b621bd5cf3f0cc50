// delayed_feedback_bench: learning from delayed clicks (issue 15,
// deliverable 3; Ktena et al. 2019). Reads one click log in its order,
// hashes it once, and for every seed of the delay draw runs the oracle,
// wait-for-TTL (each TTL of --ttls), the uncorrected fake negatives and
// FNW (bench/delayed_feedback/delayed_sim.h), each with a fresh model at
// clickd's defaults (ModelConfig{}: FTRL), and scores the model's
// probability at every impression against the impression's final label.
//
//   delayed_feedback_bench --log=train.csv --format=criteo --name=criteo_8k
//     --delay=exponential --mean_delay=600 --ttls=300,3600 --seeds=1,2,3 --out=DIR
//
// Writes DIR/{summary,curves,reliability}_<name>_<delay>.csv: final figures
// per run, logloss per window of the stream, and the reliability table by
// decile of p. bench/delayed_feedback/run.sh runs the whole grid.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/delayed_feedback/delayed_sim.h"
#include "core/eval/metrics.h"
#include "core/formats/example_reader.h"
#include "core/model/model.h"
#include "core/optim/loss.h"

ABSL_FLAG(std::string, log, "", "click log to read, in its order");
ABSL_FLAG(std::string, format, "vw", "the log's format: libsvm | vw | criteo");
ABSL_FLAG(std::string, name, "log", "the log's name in the outputs");
ABSL_FLAG(uint64_t, examples, 0, "read at most this many examples (0: all)");
ABSL_FLAG(double, interval, 10, "seconds between impressions");
ABSL_FLAG(std::string, delay, "exponential", "click delay distribution: exponential | lognormal");
ABSL_FLAG(double, mean_delay, 600, "exponential: mean click delay, seconds");
ABSL_FLAG(double, mu, 5.272, "lognormal: mean of log(delay in seconds)");
ABSL_FLAG(double, sigma, 1.5, "lognormal: standard deviation of log(delay)");
ABSL_FLAG(double, cutoff, 0,
          "attribution window, seconds: later clicks never arrive (0: 7 x the mean delay)");
ABSL_FLAG(std::string, ttls, "300,3600", "wait-for-TTL: TTLs in seconds, comma-separated");
ABSL_FLAG(std::string, seeds, "1,2,3", "seeds of the delay draw, comma-separated");
ABSL_FLAG(int, windows, 40, "points of the windowed logloss curve");
ABSL_FLAG(std::string, out, "bench/out/delayed_feedback", "output directory (must exist)");

namespace clickd::delayed {
namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "delayed_feedback_bench: %s\n", message.c_str());
  std::exit(2);
}

std::vector<double> ParseList(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    double v;
    if (!absl::SimpleAtod(part, &v) || !std::isfinite(v) || v < 0) {
      Die(absl::StrCat("--", flag, "=", text, ": expected non-negative numbers"));
    }
    out.push_back(v);
  }
  if (out.empty()) Die(absl::StrCat("--", flag, " is empty"));
  return out;
}

ClickLog ReadLog(const FeatureHasher& hasher) {
  auto format = ParseInputFormat(absl::GetFlag(FLAGS_format));
  if (!format.ok()) Die(format.status().ToString());
  auto reader = ExampleReader::Open(absl::GetFlag(FLAGS_log), *format, /*skip_bad_lines=*/false);
  if (!reader.ok()) Die(reader.status().ToString());
  const uint64_t limit = absl::GetFlag(FLAGS_examples);
  ClickLog log;
  LabeledExample example;
  std::vector<HashedFeature> features;
  while (limit == 0 || log.size() < limit) {
    auto more = (*reader)->Next(&example);
    if (!more.ok()) Die(more.status().ToString());
    if (!*more) break;
    features.clear();  // Hash appends
    hasher.Hash(example.example, &features);
    log.Add(features, example.label > 0);  // 0 and -1 are both negative
  }
  return log;
}

// One simulation's identity in every output line.
struct RunKey {
  std::string prefix;  // log,delay,seed
  Strategy strategy;
  double ttl;  // NaN unless wait-for-TTL
  std::string Line() const {
    const std::string_view strategy_name = StrategyName(strategy);
    return absl::StrCat(prefix, ",", absl::string_view(strategy_name.data(), strategy_name.size()),
                        ",", std::isnan(ttl) ? std::string() : absl::StrCat(ttl));
  }
};

struct Outputs {
  FILE* summary;
  FILE* curves;
  FILE* reliability;
};

// Writes the final figures, the windowed logloss and the deciles of p.
void Report(const RunKey& key, const std::vector<uint8_t>& labels, const SimResult& r,
            double seconds, const Outputs& out) {
  ProgressiveMetrics metrics(LossType::kLogistic);
  std::vector<std::pair<double, uint8_t>> by_p(labels.size());
  const size_t n = labels.size();
  const size_t windows = std::max<size_t>(1, std::min<size_t>(absl::GetFlag(FLAGS_windows), n));
  double window_loss = 0;
  size_t window_start = 0, window = 0, clicks = 0;
  for (size_t i = 0; i < n; ++i) {
    metrics.Add(r.margins[i], labels[i]);
    clicks += labels[i];
    by_p[i] = {Sigmoid(r.margins[i]), labels[i]};
    const double p = std::clamp(by_p[i].first, 1e-15, 1 - 1e-15);
    window_loss += -std::log(labels[i] ? p : 1 - p);
    if (i + 1 == (window + 1) * n / windows) {
      std::fprintf(out.curves, "%s,%zu,%.6f\n", key.Line().c_str(), i + 1,
                   window_loss / (i + 1 - window_start));
      window_loss = 0;
      window_start = i + 1;
      ++window;
    }
  }
  const MetricsSummary s = metrics.Summary();
  std::fprintf(out.summary, "%s,%zu,%zu,%llu,%llu,%llu,%.6f,%.6f,%.6f,%.2f\n", key.Line().c_str(),
               n, clicks, static_cast<unsigned long long>(r.learned),
               static_cast<unsigned long long>(r.learned_positive),
               static_cast<unsigned long long>(r.lost_clicks), s.logloss, s.auc, s.calibration,
               seconds);
  std::sort(by_p.begin(), by_p.end());
  for (int d = 0; d < 10; ++d) {
    double sum_p = 0, sum_y = 0;
    const size_t lo = d * n / 10, hi = (d + 1) * n / 10;
    for (size_t i = lo; i < hi; ++i) {
      sum_p += by_p[i].first;
      sum_y += by_p[i].second;
    }
    const double count = std::max<double>(1, hi - lo);
    std::fprintf(out.reliability, "%s,%d,%zu,%.6f,%.6f\n", key.Line().c_str(), d + 1, hi - lo,
                 sum_p / count, sum_y / count);
  }
}

std::unique_ptr<Model> NewModel() {
  auto model = CreateModel(ModelConfig{});  // clickd's defaults: FTRL
  if (!model.ok()) Die(model.status().ToString());
  return *std::move(model);
}

Outputs OpenOutputs(const std::string& tag) {
  const std::string dir = absl::GetFlag(FLAGS_out);
  auto open = [&](const char* what, const char* header) {
    const std::string path = absl::StrCat(dir, "/", what, "_", tag, ".csv");
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) Die(absl::StrCat("cannot write ", path));
    std::fprintf(f, "log,delay,seed,strategy,ttl,%s\n", header);
    return f;
  };
  return {open("summary",
               "examples,clicks,learned,learned_positive,lost_clicks,logloss,auc,"
               "calibration,seconds"),
          open("curves", "examples_seen,window_logloss"),
          open("reliability", "decile,count,mean_p,mean_y")};
}

int Run() {
  DelayParams delay;
  if (!ParseDelayKind(absl::GetFlag(FLAGS_delay), &delay.kind)) {
    Die(absl::StrCat("--delay=", absl::GetFlag(FLAGS_delay),
                     ": expected exponential or lognormal"));
  }
  delay.mean = absl::GetFlag(FLAGS_mean_delay);
  delay.mu = absl::GetFlag(FLAGS_mu);
  delay.sigma = absl::GetFlag(FLAGS_sigma);
  if (!(delay.mean > 0) || !(delay.sigma > 0)) Die("--mean_delay and --sigma must be > 0");
  SimOptions options;
  options.interval = absl::GetFlag(FLAGS_interval);
  options.cutoff =
      absl::GetFlag(FLAGS_cutoff) > 0 ? absl::GetFlag(FLAGS_cutoff) : 7 * MeanDelay(delay);
  const std::vector<double> ttls = ParseList("ttls", absl::GetFlag(FLAGS_ttls));
  const std::vector<double> seeds = ParseList("seeds", absl::GetFlag(FLAGS_seeds));

  const ClickLog log = ReadLog(NewModel()->hasher());
  const std::string name = absl::GetFlag(FLAGS_name), kind = absl::GetFlag(FLAGS_delay);
  const Outputs out = OpenOutputs(absl::StrCat(name, "_", kind));
  for (double seed : seeds) {
    const std::vector<double> delays = DrawDelays(log, delay, static_cast<uint64_t>(seed));
    std::vector<uint8_t> labels(log.size());
    for (size_t i = 0; i < log.size(); ++i) labels[i] = FinalLabel(delays[i], options.cutoff);
    const std::string prefix = absl::StrCat(name, ",", kind, ",", seed);
    std::vector<std::pair<Strategy, double>> runs = {
        {Strategy::kOracle, NAN}, {Strategy::kFakeNegative, NAN}, {Strategy::kFnw, NAN}};
    for (double ttl : ttls) runs.push_back({Strategy::kWaitForTtl, ttl});
    for (const auto& [strategy, ttl] : runs) {
      options.strategy = strategy;
      if (!std::isnan(ttl)) options.ttl = ttl;
      auto model = NewModel();
      const auto start = std::chrono::steady_clock::now();
      const SimResult r = Simulate(log, delays, options, model.get());
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      Report({prefix, strategy, ttl}, labels, r, took.count(), out);
    }
  }
  std::printf("delayed_feedback_bench: %s %s: %zu examples, %zu log clicks, cutoff %.0f s\n",
              name.c_str(), kind.c_str(), log.size(),
              static_cast<size_t>(std::count(log.clicked.begin(), log.clicked.end(), 1)),
              options.cutoff);
  for (FILE* f : {out.summary, out.curves, out.reliability}) std::fclose(f);
  return 0;
}

}  // namespace
}  // namespace clickd::delayed

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::delayed::Run();
}
