// Every per-coordinate optimizer, run through the real Model, against an
// independent double-precision reference written here from the papers'
// formulas, on random sparse streams. The model stores float state, so
// margins agree within kRelTol relative (plus kAbsTol absolute).
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "core/model/model.h"
#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr double kRelTol = 2e-4;
constexpr double kAbsTol = 2e-5;

struct Step {
  std::vector<HashedFeature> features;  // unique keys
  double label;
  double importance;
};

// A random sparse stream: 200 coordinates with Zipf-like frequencies, 1..12
// features per example, values in (0, 2), labels from a hidden linear model.
std::vector<Step> RandomStream(int n, uint32_t seed, bool signed_labels) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> truth(200);
  for (double& w : truth) w = unit(rng) * 2 - 1;
  std::vector<Step> steps;
  for (int i = 0; i < n; ++i) {
    std::map<uint64_t, float> chosen;
    const int k = 1 + static_cast<int>(rng() % 12);
    for (int j = 0; j < k; ++j) {
      const uint64_t key = static_cast<uint64_t>(std::pow(200.0, unit(rng))) % 200;
      chosen[key] = static_cast<float>(0.05 + 1.95 * unit(rng));
    }
    Step step;
    double margin = 0;
    for (auto [key, value] : chosen) {
      step.features.push_back({key * 7919 + 13, value});
      margin += truth[key] * value;
    }
    const bool positive = unit(rng) < 1.0 / (1.0 + std::exp(-margin));
    step.label = positive ? 1.0 : (signed_labels ? -1.0 : 0.0);
    step.importance = (i % 5 == 0) ? 2.0 : 1.0;
    steps.push_back(std::move(step));
  }
  return steps;
}

// A reference learner: weight(key, t) and step(key, g, round-state).
struct Reference {
  struct Round {
    uint64_t t = 0;
    double sum_norm_sq = 0;
    uint64_t coordinates = 0;
  };
  std::function<double(uint64_t key, const Round&)> weight;
  std::function<void(uint64_t key, double g, const Round&)> step;
};

void ExpectMatchesReference(ModelConfig config, Reference ref, const std::vector<Step>& steps) {
  config.hashing.bias = false;
  auto model = CreateModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  Reference::Round round;
  std::map<uint64_t, bool> seen;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    double ref_margin = 0;
    uint64_t fresh = 0;
    for (const auto& f : s.features) {
      ref_margin += ref.weight(f.key, round) * f.value;
      if (!seen[f.key]) ++fresh, seen[f.key] = true;
    }
    const double got = (*model)->Learn(s.features, s.label, s.importance);
    ASSERT_NEAR(got, ref_margin, kAbsTol + kRelTol * std::abs(ref_margin)) << "example " << i;
    const double dloss = LossGradient(config.loss, ref_margin, s.label) * s.importance;
    round.t += 1;
    for (const auto& f : s.features) round.sum_norm_sq += std::pow(dloss * f.value, 2);
    round.coordinates += fresh;
    for (const auto& f : s.features) ref.step(f.key, dloss * f.value, round);
  }
  EXPECT_EQ((*model)->Stats().updates, steps.size());
  EXPECT_EQ((*model)->Stats().coordinates, seen.size());
}

double Sign(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

TEST(OptimizerReference, FtrlProximalL1L2) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kFtrl;
  config.optimizer.ftrl = {.alpha = 0.3, .beta = 0.7, .lambda1 = 0.4, .lambda2 = 0.2};
  std::map<uint64_t, double> z, n;
  const FtrlParams p = config.optimizer.ftrl;
  auto weight = [&](uint64_t k, const Reference::Round&) {
    if (std::abs(z[k]) <= p.lambda1) return 0.0;
    return -(z[k] - Sign(z[k]) * p.lambda1) / ((p.beta + std::sqrt(n[k])) / p.alpha + p.lambda2);
  };
  Reference ref{weight, [&](uint64_t k, double g, const Reference::Round& r) {
                  const double sigma = (std::sqrt(n[k] + g * g) - std::sqrt(n[k])) / p.alpha;
                  z[k] += g - sigma * weight(k, r);
                  n[k] += g * g;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 1, false));
}

TEST(OptimizerReference, FtrlLambda1TimesT) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kFtrl;
  config.optimizer.ftrl = {
      .alpha = 0.5, .beta = 1.0, .lambda1 = 0.002, .lambda2 = 0.0, .lambda1_times_t = true};
  std::map<uint64_t, double> z, n;
  const FtrlParams p = config.optimizer.ftrl;
  // argmin_w g_{1:t} w + t lambda |w| + sum_s sigma_s/2 (w - w_s)^2, in closed form.
  auto weight = [&](uint64_t k, const Reference::Round& r) {
    const double l1 = p.lambda1 * static_cast<double>(r.t);
    if (std::abs(z[k]) <= l1) return 0.0;
    return -(z[k] - Sign(z[k]) * l1) / ((p.beta + std::sqrt(n[k])) / p.alpha);
  };
  Reference ref{weight, [&](uint64_t k, double g, const Reference::Round& r) {
                  const double sigma = (std::sqrt(n[k] + g * g) - std::sqrt(n[k])) / p.alpha;
                  z[k] += g - sigma * weight(k, r);
                  n[k] += g * g;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 2, false));
}

TEST(OptimizerReference, AdagradCompositeMirrorDescentL1) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kAdagrad;
  config.optimizer.adagrad = {.eta = 0.4, .delta = 0.5, .lambda = 0.01};
  const AdagradParams p = config.optimizer.adagrad;
  std::map<uint64_t, double> x, s;
  Reference ref{[&](uint64_t k, const Reference::Round&) { return x[k]; },
                [&](uint64_t k, double g, const Reference::Round&) {
                  s[k] += g * g;
                  const double h = p.delta + std::sqrt(s[k]);
                  const double v = x[k] - p.eta / h * g;
                  x[k] = Sign(v) * std::max(0.0, std::abs(v) - p.lambda * p.eta / h);
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 3, false));
}

TEST(OptimizerReference, AdagradDualAveragingL1) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kAdagradDa;
  config.optimizer.adagrad = {.eta = 0.3, .delta = 1.0, .lambda = 0.001};
  const AdagradParams p = config.optimizer.adagrad;
  std::map<uint64_t, double> gsum, s;
  // x_{t+1,i} = sign(-gbar) eta t / H_ii [|gbar| - lambda]_+, gbar = u / t.
  Reference ref{[&](uint64_t k, const Reference::Round& r) {
                  if (r.t == 0) return 0.0;
                  const double t = static_cast<double>(r.t);
                  const double gbar = gsum[k] / t;
                  const double h = p.delta + std::sqrt(s[k]);
                  return -Sign(gbar) * p.eta * t / h * std::max(0.0, std::abs(gbar) - p.lambda);
                },
                [&](uint64_t k, double g, const Reference::Round&) {
                  gsum[k] += g;
                  s[k] += g * g;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 4, false));
}

TEST(OptimizerReference, PerCoordinateOgdHinge) {
  ModelConfig config;
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPcOgd;
  config.optimizer.pc_ogd = {.radius = 2.0, .scale = 0.3};
  const PcOgdParams p = config.optimizer.pc_ogd;
  std::map<uint64_t, double> x, s;
  Reference ref{[&](uint64_t k, const Reference::Round&) { return x[k]; },
                [&](uint64_t k, double g, const Reference::Round&) {
                  s[k] += g * g;
                  if (s[k] == 0) return;
                  const double eta = p.scale * (2 * p.radius) / std::sqrt(s[k]);
                  x[k] = std::clamp(x[k] - eta * g, -p.radius, p.radius);
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 5, true));
}

TEST(OptimizerReference, GlobalOgdWithOnlineDiameter) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kGlobalOgd;
  config.optimizer.global_ogd = {.radius = 1.0, .scale = 0.1};
  const GlobalOgdParams p = config.optimizer.global_ogd;
  std::map<uint64_t, double> x;
  Reference ref{[&](uint64_t k, const Reference::Round&) { return x[k]; },
                [&](uint64_t k, double g, const Reference::Round& r) {
                  const double d = 2 * p.radius * std::sqrt(static_cast<double>(r.coordinates));
                  const double eta = p.scale * d / std::sqrt(2 * r.sum_norm_sq);
                  x[k] = std::clamp(x[k] - eta * g, -p.radius, p.radius);
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 6, false));
}

TEST(OptimizerReference, SgdInverseSqrtT) {
  ModelConfig config;
  config.loss = LossType::kSquared;
  config.optimizer.type = OptimizerType::kSgd;
  config.optimizer.sgd = {.eta = 0.05};
  std::map<uint64_t, double> x;
  Reference ref{[&](uint64_t k, const Reference::Round&) { return x[k]; },
                [&](uint64_t k, double g, const Reference::Round& r) {
                  x[k] -= 0.05 / std::sqrt(static_cast<double>(r.t)) * g;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 7, false));
}

}  // namespace
}  // namespace clickd
