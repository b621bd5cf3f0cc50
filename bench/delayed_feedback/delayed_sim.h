// A delayed-click simulator over a click log (issue 15, deliverable 3).
//
// Impression i of the log happens at time i * interval. A clicked impression
// gets a click delay; its click arrives at (impression time + delay) if the
// delay is within the attribution window (`cutoff`), and never otherwise, so
// its final label is "clicked and delay <= cutoff". Events (impressions,
// clicks, TTL expiries) are processed in time order, and one of four
// strategies (below; docs/results_delayed_feedback.md has a table of them)
// decides what the model learns at each. Every strategy is scored the
// same way: the model's margin at each impression, before anything is
// learned from it, against the impression's final label.
//
// Not thread-safe: one simulation per model at a time.
#ifndef CLICKD_BENCH_DELAYED_FEEDBACK_DELAYED_SIM_H_
#define CLICKD_BENCH_DELAYED_FEEDBACK_DELAYED_SIM_H_

#include <cstdint>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/model/model.h"

namespace clickd::delayed {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

// A click log hashed once, shared by every simulation over it.
struct ClickLog {
  std::vector<HashedFeature> features;  // every example's, concatenated
  std::vector<size_t> offsets{0};       // example i is [offsets[i], offsets[i+1])
  std::vector<uint8_t> clicked;         // the log's label

  size_t size() const { return clicked.size(); }
  void Add(absl::Span<const HashedFeature> f, bool click);
  absl::Span<const HashedFeature> Features(size_t i) const {
    return absl::MakeConstSpan(features).subspan(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

enum class DelayKind { kExponential, kLogNormal };
bool ParseDelayKind(std::string_view name, DelayKind* out);

struct DelayParams {
  DelayKind kind = DelayKind::kExponential;
  double mean = 600;  // exponential, seconds
  double mu = 0;      // log-normal: log(delay) ~ N(mu, sigma^2), delay in seconds
  double sigma = 1;
};

// Mean of the delay distribution, in seconds.
double MeanDelay(const DelayParams& params);

// One delay per example: a draw for each clicked example, in log order from
// one std::mt19937_64 seeded with `seed`, and kNever for the others.
std::vector<double> DrawDelays(const ClickLog& log, const DelayParams& params, uint64_t seed);

enum class Strategy {
  kOracle,        // learns each impression at once with its final label
  kWaitForTtl,    // a click within the TTL: positive on arrival; none: negative at the TTL
  kFakeNegative,  // every impression a negative at once; a click a positive on arrival
  kFnw,           // kFakeNegative with the weights of core/feedback/delayed_feedback.h
};
std::string_view StrategyName(Strategy s);
bool ParseStrategy(std::string_view name, Strategy* out);

struct SimOptions {
  Strategy strategy = Strategy::kOracle;
  double interval = 10;  // seconds between impressions
  double ttl = 3600;     // seconds an impression waits for its click (kWaitForTtl)
  double cutoff = 4200;  // attribution window, seconds: later clicks never arrive
  // kFnw's p: the model's probability for the example just before the
  // step. False puts p = 0 in the weights (both weights are then 1), which
  // the test uses to show that the weights are FNW's only difference from
  // kFakeNegative.
  bool fnw_use_model_p = true;
};

// The final label of impression i: clicked, and its click arrives.
inline bool FinalLabel(double delay, double cutoff) { return delay <= cutoff; }

enum class EventKind : uint8_t { kImpression = 0, kClick = 1, kExpiry = 2 };

struct Event {
  double time;
  EventKind kind;
  uint32_t index;  // the impression's position in the log
};

// The simulation's events in processing order: by time; at equal times
// impressions first, then clicks, then expiries (so an impression precedes
// its own zero-delay click, and a click at exactly the TTL is within it),
// then by index. Expiries only for kWaitForTtl; clicks only when they arrive.
std::vector<Event> BuildEvents(const std::vector<double>& delays, const SimOptions& options);

// One learning step, for tests.
struct LearnStep {
  double time;
  uint32_t index;
  double label;
  double importance;
};

struct SimResult {
  // The model's margin at each impression, in log order.
  std::vector<double> margins;
  uint64_t learned = 0;           // learning steps
  uint64_t learned_positive = 0;  // of which positives
  uint64_t lost_clicks = 0;       // final clicks the strategy never learns as positives
};

// Runs one strategy over the log with `model` (learning in place). With
// `trace`, appends every learning step in the order taken.
SimResult Simulate(const ClickLog& log, const std::vector<double>& delays,
                   const SimOptions& options, Model* model,
                   std::vector<LearnStep>* trace = nullptr);

}  // namespace clickd::delayed

#endif  // CLICKD_BENCH_DELAYED_FEEDBACK_DELAYED_SIM_H_
