// Every optimizer, run through the real Model, against an independent
// double-precision reference written here from the papers' formulas, on
// random sparse streams. The model stores float state, so margins agree
// within kRelTol relative (plus kAbsTol absolute). The per-example
// classifiers (PA, CW) get a reference that sees the whole example.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
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

// The step's kept root (WeightWithRoot, then ApplyWithWeightAndRoot) is
// Weight then ApplyWithWeight bit for bit, also when the state's n has
// changed since the root was taken (a key given twice in one step).
TEST(OptimizerReference, FtrlKeptRootIsBitIdentical) {
  FtrlParams params;
  params.lambda1 = 0.5;
  params.lambda2 = 0.25;
  params.decay = 0.999;
  const FtrlProximal ftrl(params);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> z(-3.0f, 3.0f), n(0.0f, 50.0f), g(-2.0f, 2.0f);
  const RoundContext round{};
  for (int i = 0; i < 10000; ++i) {
    FtrlProximal::State a{z(rng), i % 7 == 0 ? 0.0f : n(rng)};
    FtrlProximal::State b = a;
    FtrlProximal::Root root;
    const double w = ftrl.WeightWithRoot(a, round, &root);
    ASSERT_EQ(w, ftrl.Weight(b, round));
    const double grad = g(rng);
    if (i % 3 == 0) {  // n moves between the root and the update
      a.n += 1.5f;
      b.n += 1.5f;
    }
    ftrl.ApplyWithWeightAndRoot(a, grad, w, root);
    ftrl.ApplyWithWeight(b, grad, w);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof(a)), 0) << i;
  }
}

// WeightsWithRoots takes states two at a time (SSE2 on x86-64): every
// weight and root must be WeightWithRoot's to the bit, for states inside and
// outside the L1 threshold, zero, signed zeros, huge and tiny values, odd
// counts (the last one alone), with L1 times t, and without roots.
TEST(OptimizerReference, FtrlWeightsTogetherAreBitIdentical) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> z(-3.0f, 3.0f), n(0.0f, 50.0f);
  const float specials[] = {0.0f,  -0.0f,  0.5f,  -0.5f,  1e-30f, -1e-30f, 1e-45f,
                            3e38f, -3e38f, 0.25f, -0.25f, 1e20f,  7.0f,    -7.0f};
  for (const bool times_t : {false, true}) {
    FtrlParams params;
    params.alpha = 0.3;
    params.beta = 0.7;
    params.lambda1 = 0.5;
    params.lambda2 = times_t ? 0.0 : 0.25;
    params.lambda1_times_t = times_t;
    const FtrlProximal ftrl(params);
    const RoundContext round{.t = 3};
    for (size_t count : {0, 1, 2, 3, 8, 41, 101}) {
      std::vector<FtrlProximal::State> states(count);
      for (size_t i = 0; i < count; ++i) {
        const size_t pick = rng() % 20;
        states[i] = {pick < 14 ? specials[pick] : z(rng),
                     i % 5 == 0 ? specials[rng() % 2] : n(rng)};
        if (i % 9 == 4) states[i].n = 3e38f;
      }
      std::vector<double> weights(count), plain(count);
      std::vector<FtrlProximal::Root> roots(count);
      ftrl.WeightsWithRoots(
          count, [&](size_t i) { return &states[i]; }, round, weights.data(), roots.data());
      ftrl.WeightsWithRoots(
          count, [&](size_t i) { return &states[i]; }, round, plain.data(), nullptr);
      for (size_t i = 0; i < count; ++i) {
        FtrlProximal::Root root;
        const double w = ftrl.WeightWithRoot(states[i], round, &root);
        ASSERT_EQ(std::memcmp(&weights[i], &w, sizeof(w)), 0) << count << " " << i;
        ASSERT_EQ(std::memcmp(&plain[i], &w, sizeof(w)), 0) << count << " " << i;
        ASSERT_EQ(std::memcmp(&roots[i].value, &root.value, sizeof(double)), 0) << i;
        ASSERT_EQ(std::memcmp(&roots[i].of, &root.of, sizeof(float)), 0) << i;
      }
    }
  }
}

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

TEST(OptimizerReference, FtrlDecayedAccumulator) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kFtrl;
  config.optimizer.ftrl = {
      .alpha = 0.3, .beta = 0.7, .lambda1 = 0.05, .lambda2 = 0.1, .decay = 0.9};
  std::map<uint64_t, double> z, n;
  const FtrlParams p = config.optimizer.ftrl;
  auto weight = [&](uint64_t k, const Reference::Round&) {
    if (std::abs(z[k]) <= p.lambda1) return 0.0;
    return -(z[k] - Sign(z[k]) * p.lambda1) / ((p.beta + std::sqrt(n[k])) / p.alpha + p.lambda2);
  };
  Reference ref{weight, [&](uint64_t k, double g, const Reference::Round& r) {
                  const double next_n = p.decay * n[k] + g * g;
                  const double sigma = (std::sqrt(next_n) - std::sqrt(n[k])) / p.alpha;
                  z[k] += g - sigma * weight(k, r);
                  n[k] = next_n;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 3, false));
}

// Without L1 and L2, decayed FTRL is per-coordinate OGD with the rate
// alpha / (beta + sqrt(n_i)) on the decayed n_i (the identity in ftrl.h),
// so a frequent coordinate's rate stays near alpha sqrt(1 - decay) / |g|.
TEST(OptimizerReference, FtrlDecayIsOgdWithDecayedRate) {
  const FtrlParams p{.alpha = 0.2, .beta = 1.0, .decay = 0.99};
  FtrlProximal ftrl(p);
  FtrlProximal::State s;
  const RoundContext round;
  double w = 0, n = 0;
  for (int i = 0; i < 5000; ++i) {
    const double g = (i % 3 == 0) ? -0.5 : 0.3;
    ftrl.Apply(s, g, round);
    n = p.decay * n + g * g;
    w -= g * p.alpha / (p.beta + std::sqrt(n));
    ASSERT_NEAR(ftrl.Weight(s, round), w, 1e-3 + 1e-3 * std::abs(w)) << "step " << i;
  }
  // The accumulator stays bounded (the rate does not freeze).
  EXPECT_LT(s.n, 0.5 * 0.5 / (1 - p.decay) + 1e-3);
}

// decay = 1 must be Algorithm 1 bit for bit: the default path's digests
// are unchanged.
TEST(OptimizerReference, FtrlDecayOneIsBitIdentical) {
  FtrlProximal plain(FtrlParams{.alpha = 0.3, .beta = 0.7, .lambda1 = 0.1});
  FtrlProximal::State a, b;
  const RoundContext round;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> gauss(0, 1);
  for (int i = 0; i < 1000; ++i) {
    const double g = gauss(rng);
    plain.Apply(a, g, round);
    // Algorithm 1 as written before the decay existed.
    const double w = plain.Weight(b, round);
    const double n = b.n;
    const double sigma = (std::sqrt(n + g * g) - std::sqrt(n)) / 0.3;
    b.z = static_cast<float>(b.z + g - sigma * w);
    b.n = static_cast<float>(n + g * g);
    ASSERT_EQ(a.z, b.z);
    ASSERT_EQ(a.n, b.n);
  }
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

// MetaGrad (seed 003's slides, "MetaGrad Master" and "MetaGrad Slave") with
// d = 1 on each coordinate, 21 rates eta_i = 2^-i / (5 D G), prior
// 1/((i+1)(i+2)) (normalisation cancels): with S = sum g^2 and
// r = (w^eta - w) g, each slave's surrogate loss grows by eta r + eta^2 r^2,
// w^eta = clip(w^eta - eta (1 + 2 eta r) g / (1/D^2 + 2 eta^2 S), -D/2, D/2),
// and w is the average of the w^eta weighted by pi(eta) e^{-L^eta} eta.
TEST(OptimizerReference, MetaGradPerCoordinate) {
  ModelConfig config;
  config.optimizer.type = OptimizerType::kMetaGradDiag;
  // D/2 = 1 is inside the hidden model's range, so slaves do get clipped.
  config.optimizer.metagrad_diag = {.diameter = 2.0, .gradient_bound = 4.0};
  const double d = 2.0, gb = 4.0;
  constexpr int kRates = 21;
  struct Coordinate {
    double w = 0, sum_g2 = 0, slave_w[kRates] = {}, loss[kRates] = {};
  };
  std::map<uint64_t, Coordinate> coords;
  int clipped = 0;
  Reference ref{[&](uint64_t k, const Reference::Round&) { return coords[k].w; },
                [&](uint64_t k, double g, const Reference::Round&) {
                  Coordinate& c = coords[k];
                  c.sum_g2 += g * g;
                  double log_weight[kRates];
                  double max_log_weight = -std::numeric_limits<double>::infinity();
                  for (int i = 0; i < kRates; ++i) {
                    const double eta = std::pow(2.0, -i) / (5 * d * gb);
                    const double r = (c.slave_w[i] - c.w) * g;
                    c.loss[i] += eta * r + eta * eta * r * r;
                    const double step =
                        eta * (1 + 2 * eta * r) * g / (1 / (d * d) + 2 * eta * eta * c.sum_g2);
                    const double raw = c.slave_w[i] - step;
                    c.slave_w[i] = std::clamp(raw, -d / 2, d / 2);
                    clipped += c.slave_w[i] != raw;
                    log_weight[i] = -std::log((i + 1.0) * (i + 2.0)) - c.loss[i] + std::log(eta);
                    max_log_weight = std::max(max_log_weight, log_weight[i]);
                  }
                  double num = 0, den = 0;
                  for (int i = 0; i < kRates; ++i) {
                    const double weight = std::exp(log_weight[i] - max_log_weight);
                    num += weight * c.slave_w[i];
                    den += weight;
                  }
                  c.w = num / den;
                }};
  ExpectMatchesReference(config, ref, RandomStream(3000, 10, false));
  EXPECT_GT(clipped, 100);
}

// A reference for a per-example classifier: weight(key), and step(example,
// margin), the margin being the reference's own pre-update margin.
struct ExampleReference {
  std::function<double(uint64_t key)> weight;
  std::function<void(const Step& example, double margin)> step;
};

void ExpectMatchesExampleReference(ModelConfig config, ExampleReference ref,
                                   const std::vector<Step>& steps) {
  config.hashing.bias = false;
  auto model = CreateModel(config);
  ASSERT_TRUE(model.ok()) << model.status();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    double ref_margin = 0;
    for (const auto& f : s.features) ref_margin += ref.weight(f.key) * f.value;
    const double got = (*model)->Learn(s.features, s.label, s.importance);
    ASSERT_NEAR(got, ref_margin, kAbsTol + kRelTol * std::abs(ref_margin)) << "example " << i;
    ref.step(s, ref_margin);
  }
  EXPECT_EQ((*model)->Stats().updates, steps.size());
}

// Crammer et al. 2006, PA-I: tau = min(C, l / ||x||^2), w += tau y x; the
// importance weight h multiplies C.
TEST(OptimizerReference, PassiveAggressiveI) {
  ModelConfig config;
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPa;
  config.optimizer.pa = {.c = 0.1};
  const double c = 0.1;
  std::map<uint64_t, double> w;
  int capped = 0, exact = 0;
  ExampleReference ref{[&](uint64_t k) { return w[k]; },
                       [&](const Step& s, double margin) {
                         const double y = s.label > 0 ? 1 : -1;
                         const double loss = std::max(0.0, 1 - y * margin);
                         double norm_sq = 0;
                         for (const auto& f : s.features) norm_sq += double{f.value} * f.value;
                         if (loss == 0) return;
                         const double tau = std::min(c * s.importance, loss / norm_sq);
                         ++(tau < loss / norm_sq ? capped : exact);
                         for (const auto& f : s.features) w[f.key] += tau * y * f.value;
                       }};
  ExpectMatchesExampleReference(config, ref, RandomStream(3000, 8, true));
  // Both branches of the min were taken.
  EXPECT_GT(capped, 100);
  EXPECT_GT(exact, 100);
}

// Phi^{-1}(eta) by Newton's method on erfc, independent of NormalQuantile.
double ReferenceQuantile(double eta) {
  double x = 0;
  for (int i = 0; i < 100; ++i) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
    x -= (cdf - eta) / pdf;
  }
  return x;
}

// Dredze, Crammer & Pereira 2008, "Variance" update with diagonal Sigma:
// gamma = (-(1 + 2 phi M) + sqrt((1 + 2 phi M)^2 - 8 phi (M - phi V))) / (4 phi V),
// alpha = max(0, gamma) (times the importance weight),
// mu_i += alpha y sigma_i x_i, 1/sigma_i += 2 alpha phi x_i^2.
TEST(OptimizerReference, ConfidenceWeightedDiagonalVariance) {
  ModelConfig config;
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kCw;
  config.optimizer.cw = {.eta = 0.9, .a = 0.5};
  const double phi = ReferenceQuantile(0.9), a = 0.5;
  std::map<uint64_t, double> mu, sigma;
  auto sigma_of = [&](uint64_t k) { return sigma.count(k) ? sigma[k] : a; };
  int updates = 0, passive = 0;
  ExampleReference ref{[&](uint64_t k) { return mu[k]; },
                       [&](const Step& s, double margin) {
                         const double y = s.label > 0 ? 1 : -1;
                         const double m = y * margin;
                         double v = 0;
                         for (const auto& f : s.features) v += sigma_of(f.key) * f.value * f.value;
                         const double b = 1 + 2 * phi * m;
                         const double gamma =
                             (-b + std::sqrt(b * b - 8 * phi * (m - phi * v))) / (4 * phi * v);
                         const double alpha = std::max(0.0, gamma) * s.importance;
                         ++(alpha > 0 ? updates : passive);
                         for (const auto& f : s.features) {
                           const double sig = sigma_of(f.key);
                           mu[f.key] += alpha * y * sig * f.value;
                           sigma[f.key] = 1 / (1 / sig + 2 * alpha * phi * f.value * f.value);
                         }
                       }};
  ExpectMatchesExampleReference(config, ref, RandomStream(3000, 9, true));
  EXPECT_GT(updates, 100);
  EXPECT_GT(passive, 100);
}

}  // namespace
}  // namespace clickd
