#include "bench/delayed_feedback/delayed_sim.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/feedback/delayed_feedback.h"
#include "core/optim/loss.h"

namespace clickd::delayed {

void ClickLog::Add(absl::Span<const HashedFeature> f, bool click) {
  features.insert(features.end(), f.begin(), f.end());
  offsets.push_back(features.size());
  clicked.push_back(click ? 1 : 0);
}

bool ParseDelayKind(std::string_view name, DelayKind* out) {
  if (name == "exponential") {
    *out = DelayKind::kExponential;
  } else if (name == "lognormal") {
    *out = DelayKind::kLogNormal;
  } else {
    return false;
  }
  return true;
}

double MeanDelay(const DelayParams& params) {
  if (params.kind == DelayKind::kExponential) return params.mean;
  return std::exp(params.mu + params.sigma * params.sigma / 2);
}

std::vector<double> DrawDelays(const ClickLog& log, const DelayParams& params, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> exponential(1.0 / params.mean);
  std::lognormal_distribution<double> lognormal(params.mu, params.sigma);
  std::vector<double> delays(log.size(), kNever);
  for (size_t i = 0; i < log.size(); ++i) {
    if (!log.clicked[i]) continue;
    delays[i] = params.kind == DelayKind::kExponential ? exponential(rng) : lognormal(rng);
  }
  return delays;
}

namespace {
constexpr std::string_view kStrategyNames[] = {"oracle", "wait_ttl", "fake_negative", "fnw"};
}  // namespace

std::string_view StrategyName(Strategy s) { return kStrategyNames[static_cast<int>(s)]; }

bool ParseStrategy(std::string_view name, Strategy* out) {
  for (int i = 0; i < 4; ++i) {
    if (name == kStrategyNames[i]) {
      *out = static_cast<Strategy>(i);
      return true;
    }
  }
  return false;
}

std::vector<Event> BuildEvents(const std::vector<double>& delays, const SimOptions& options) {
  std::vector<Event> events;
  events.reserve(delays.size() * 2);
  const bool expiries = options.strategy == Strategy::kWaitForTtl;
  for (uint32_t i = 0; i < delays.size(); ++i) {
    const double t = i * options.interval;
    events.push_back({t, EventKind::kImpression, i});
    if (FinalLabel(delays[i], options.cutoff))
      events.push_back({t + delays[i], EventKind::kClick, i});
    if (expiries) events.push_back({t + options.ttl, EventKind::kExpiry, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tie(a.time, a.kind, a.index) < std::tie(b.time, b.kind, b.index);
  });
  return events;
}

namespace {

// Applies one strategy's learning steps; keeps the counts and the trace.
class Learner {
 public:
  Learner(const ClickLog& log, Model* model, SimResult* result, std::vector<LearnStep>* trace)
      : log_(log), model_(model), result_(result), trace_(trace) {}

  // Returns the margin before the step.
  double Learn(const Event& e, double label, double importance) {
    ++result_->learned;
    if (label > 0) ++result_->learned_positive;
    if (trace_ != nullptr) trace_->push_back({e.time, e.index, label, importance});
    return model_->Learn(log_.Features(e.index), label, importance);
  }
  double Margin(uint32_t index) const { return model_->Margin(log_.Features(index)); }

 private:
  const ClickLog& log_;
  Model* model_;
  SimResult* result_;
  std::vector<LearnStep>* trace_;
};

}  // namespace

SimResult Simulate(const ClickLog& log, const std::vector<double>& delays,
                   const SimOptions& options, Model* model, std::vector<LearnStep>* trace) {
  SimResult result;
  result.margins.assign(log.size(), 0.0);
  Learner learner(log, model, &result, trace);
  std::vector<uint8_t> labelled(log.size(), 0);  // kWaitForTtl: learned already
  for (const Event& e : BuildEvents(delays, options)) {
    const uint32_t i = e.index;
    switch (options.strategy) {
      case Strategy::kOracle:
        if (e.kind == EventKind::kImpression) {
          result.margins[i] = learner.Learn(e, FinalLabel(delays[i], options.cutoff), 1.0);
        }
        break;
      case Strategy::kWaitForTtl:
        if (e.kind == EventKind::kImpression) {
          result.margins[i] = learner.Margin(i);
        } else if (labelled[i]) {
          if (e.kind == EventKind::kClick) ++result.lost_clicks;  // after the TTL
        } else {
          learner.Learn(e, e.kind == EventKind::kClick ? 1.0 : 0.0, 1.0);
          labelled[i] = 1;
        }
        break;
      case Strategy::kFakeNegative:
        if (e.kind == EventKind::kImpression) {
          result.margins[i] = learner.Learn(e, 0.0, 1.0);
        } else {
          learner.Learn(e, 1.0, 1.0);
        }
        break;
      case Strategy::kFnw: {
        // The weight needs p before the step, so the margin is read first.
        const double margin = learner.Margin(i);
        const double p = options.fnw_use_model_p ? Sigmoid(margin) : 0.0;
        if (e.kind == EventKind::kImpression) {
          result.margins[i] = margin;
          learner.Learn(e, 0.0, FnwNegativeWeight(p));
        } else {
          learner.Learn(e, 1.0, FnwPositiveWeight(p));
        }
        break;
      }
    }
  }
  return result;
}

}  // namespace clickd::delayed
