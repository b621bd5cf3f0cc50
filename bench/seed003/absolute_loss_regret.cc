// absolute_loss_regret: seed 003's example where MetaGrad has O(ln T) regret
// and AdaGrad O(sqrt T) (slides "Consequences" and "Difference in Rates Not
// Just Theoretical"): i.i.d. absolute losses with a margin,
//   f_t(w) = ||w - x_t||_1,  x_{t,i} = +1/2 with probability p, else -1/2,
// independently per coordinate (d = 1 is the slides' |u - X_t|), played on
// w in [-1, 1]^d by the per-coordinate learners and on the Euclidean ball of
// radius sqrt(d) (the box's circumscribed ball; D = 2 sqrt(d), G = sqrt(d))
// by full-matrix MetaGrad. The subgradient is sign(w_i - x_{t,i}) (0 at a tie).
//
// Learners:
//   metagrad       dense/metagrad.h, K = ceil(log2(T)/2) + 1 rates for this T
//   metagrad_diag  metagrad_diag.h per coordinate, D = 2, G = 1, K = 21
//   adagrad        diagonal AdaGrad with projection onto [-1, 1]: the
//                  per-coordinate OGD of box_ogd.h (PcOgd) with
//                  eta_{t,i} = D / sqrt(2 sum_{s<=t} g_{s,i}^2), D = 2 (Duchi et al.
//                  2011's tuning eta = D_inf / sqrt(2) for a box)
// For each T in --horizons and each seed, every learner plays the first T
// rounds of the seed's stream from scratch. Regret is taken against the best
// fixed point in hindsight (per coordinate the majority value +-1/2; loss
// min(n+, n-)) and, as the slides' theorem states it, against the stochastic
// optimum u* (+1/2 when p > 1/2). One JSON line per (learner, T, seed).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/optim/box_ogd.h"
#include "core/optim/dense/metagrad.h"
#include "core/optim/metagrad_diag.h"

ABSL_FLAG(double, p, 0.6, "probability that x_{t,i} = +1/2 (margin 2p - 1)");
ABSL_FLAG(int, dim, 1, "d");
ABSL_FLAG(std::vector<std::string>, horizons, {}, "the T values (default 10^2 .. 10^6, 4/decade)");
ABSL_FLAG(int, seeds, 10, "seeds 1..n");
ABSL_FLAG(std::vector<std::string>, learners,
          std::vector<std::string>({"metagrad", "metagrad_diag", "adagrad"}), "learners to run");

namespace clickd::seed003 {
namespace {

// The first n points of a seed's stream, x_{t,i} = xs[t * dim + i] in {-1/2, +1/2}.
std::vector<double> Stream(uint64_t seed, int dim, int64_t n, double p) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution upper(p);
  std::vector<double> xs(n * dim);
  for (double& x : xs) x = upper(rng) ? 0.5 : -0.5;
  return xs;
}

double Sign(double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }

// One learner's online loss over the first T points.
double PlayMetaGrad(const std::vector<double>& xs, int64_t T, int dim) {
  MetaGradParams params;
  params.diameter = 2 * std::sqrt(dim);
  params.gradient_bound = std::sqrt(dim);
  params.horizon = T;
  auto opt = NewMetaGrad(params, dim);
  Eigen::VectorXd g(dim);
  double loss = 0;
  for (int64_t t = 0; t < T; ++t) {
    const Eigen::VectorXd& w = opt->weights();
    for (int i = 0; i < dim; ++i) {
      const double x = xs[t * dim + i];
      loss += std::abs(w[i] - x);
      g[i] = Sign(w[i] - x);
    }
    opt->Update(g);
  }
  return loss;
}

template <typename Optimizer>
double PlayPerCoordinate(const Optimizer& opt, const std::vector<double>& xs, int64_t T, int dim) {
  std::vector<typename Optimizer::State> states(dim);
  RoundContext round;
  double loss = 0;
  for (int64_t t = 0; t < T; ++t) {
    round.t = t + 1;
    for (int i = 0; i < dim; ++i) {
      const double w = opt.Weight(states[i], round);
      const double x = xs[t * dim + i];
      loss += std::abs(w - x);
      opt.Apply(states[i], Sign(w - x), round);
    }
  }
  return loss;
}

std::vector<int64_t> Horizons() {
  std::vector<int64_t> out;
  for (const std::string& s : absl::GetFlag(FLAGS_horizons)) {
    int64_t v;
    if (absl::SimpleAtoi(s, &v)) out.push_back(v);
  }
  if (out.empty()) {
    for (int k = 0; k <= 16; ++k) out.push_back(std::llround(std::pow(10.0, 2 + k / 4.0)));
  }
  return out;
}

int Main() {
  const double p = absl::GetFlag(FLAGS_p);
  const int dim = absl::GetFlag(FLAGS_dim);
  const std::vector<int64_t> horizons = Horizons();
  const int64_t t_max = horizons.back();
  const MetaGradDiag diag(MetaGradDiagParams{.diameter = 2.0, .gradient_bound = 1.0});
  const PcOgd adagrad(PcOgdParams{.radius = 1.0, .scale = 1.0 / std::sqrt(2.0)});
  for (int seed = 1; seed <= absl::GetFlag(FLAGS_seeds); ++seed) {
    const auto xs = Stream(seed, dim, t_max, p);
    for (int64_t T : horizons) {
      // Hindsight optimum and u* (+1/2 per coordinate if p > 1/2, else -1/2).
      double best = 0, at_ustar = 0;
      for (int i = 0; i < dim; ++i) {
        int64_t up = 0;
        for (int64_t t = 0; t < T; ++t) up += xs[t * dim + i] > 0;
        best += static_cast<double>(std::min(up, T - up));
        at_ustar += static_cast<double>(p > 0.5 ? T - up : up);
      }
      for (const std::string& learner : absl::GetFlag(FLAGS_learners)) {
        const auto start = std::chrono::steady_clock::now();
        double loss;
        if (learner == "metagrad") {
          loss = PlayMetaGrad(xs, T, dim);
        } else if (learner == "metagrad_diag") {
          loss = PlayPerCoordinate(diag, xs, T, dim);
        } else if (learner == "adagrad") {
          loss = PlayPerCoordinate(adagrad, xs, T, dim);
        } else {
          std::fprintf(stderr, "unknown learner %s\n", learner.c_str());
          return 2;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf(
            "{\"p\":%g,\"dim\":%d,\"learner\":\"%s\",\"T\":%lld,\"seed\":%d,\"loss\":%.17g,"
            "\"regret\":%.17g,\"regret_ustar\":%.17g,\"seconds\":%.4f}\n",
            p, dim, learner.c_str(), static_cast<long long>(T), seed, loss, loss - best,
            loss - at_ustar, seconds);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace clickd::seed003

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::seed003::Main();
}
