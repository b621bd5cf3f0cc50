// theorem1: seed 001's Theorem 1 construction (Streeter & McMahan 2010,
// section 2.3), where gradient descent with a global learning rate has
// regret Omega(T^(2/3)) and with per-coordinate rates O(sqrt(T)).
//
// The instance, as in the proof, with G = 1 and feasible set [0, 1] per
// coordinate, for T0 = k^3 and C = T1 = k (so T = T0 + C T1 = k^3 + k^2):
//   rounds 1..T0:  f_t(x) = |x_1 - epsilon|           (coordinate 1)
//   round t > T0:  f_t(x) = -x_j, j = 1 + ceil((t - T0) / T1)  (C blocks of T1)
// (the paper prints ceil((T - T0) / T1); with t it is the interleaving the
// proof describes: each later block has its own coordinate). Every learner
// starts at x_1 = 0, as Algorithm 1 does. The best fixed point in hindsight
// is x_1 = epsilon, x_j = 1, with total loss -C T1, so
//   regret = sum_t f_t(x_t) + C T1.
//
// The learners are clickd's optimizers from core/optim/box_ogd.h, stepped
// directly (no Model: one coordinate is active per round). [0, 1] is the box
// [-R, R] with R = 1/2 shifted by 1/2, so a weight w plays x = w + 1/2:
// - pc_ogd: PcOgd, scale 1: eta_{s,i} = 2R / sqrt(sum g^2) = 1/sqrt(s) on
//   round s of a coordinate, the theorem's per-coordinate rate.
// - global_ogd: GlobalOgd, scale 1, with the round counters a Model keeps:
//   eta_t = D_t / sqrt(2 sum_{s<=t} ||g_s||^2), D_t = sqrt(n_t), n_t the
//   coordinates seen so far (Theorem 2's rate, the diameter estimated online).
// - global_fixed: a constant global rate eta, which the theorem's lower bound
//   covers (for any fixed eta). GlobalOgd's step is clip(w - eta_t g) with
//   eta_t = scale 2R sqrt(n) / sqrt(2 S) read from the round counters;
//   holding them at n = 1, S = 1/2 makes eta_t = scale, so this is
//   GlobalOgd with a frozen round and scale = eta. Run for every eta of a
//   log grid (--eta_min..--eta_max, --etas_per_decade) and for Zinkevich's
//   known-T rate eta = D / (G sqrt(T)), D = sqrt(1 + C) the diameter of
//   [0, 1]^(1+C) ("global_theory").
//
// Prints one CSV row per (k, learner, eta) to stdout and to --out:
// k,T0,C,T1,T,learner,eta,regret_first,regret_later,regret, where
// regret_first is the regret on coordinate 1 and regret_later on the C
// later coordinates (the two terms of the proof's lower bound).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/optim/box_ogd.h"
#include "core/optim/round.h"

ABSL_FLAG(std::vector<std::string>, k,
          std::vector<std::string>({"10", "15", "22", "32", "46", "68", "100", "147", "215"}),
          "instance sizes: T0 = k^3, C = T1 = k");
ABSL_FLAG(double, epsilon, 1e-3, "the first coordinate's loss is |x - epsilon|");
ABSL_FLAG(double, eta_min, 1e-4, "global_fixed: smallest eta of the grid");
ABSL_FLAG(double, eta_max, 1.0, "global_fixed: largest eta of the grid");
ABSL_FLAG(int, etas_per_decade, 8, "global_fixed: grid points per factor 10");
ABSL_FLAG(std::string, out, "", "CSV output path (empty: stdout only)");

namespace clickd::seed001 {
namespace {

constexpr double kRadius = 0.5;  // [-1/2, 1/2] is [0, 1] shifted

struct Instance {
  uint64_t k, t0, c, t1;
  uint64_t T() const { return t0 + c * t1; }
};

struct Regret {
  double first = 0;  // coordinate 1: sum |x - eps|, comparator 0
  double later = 0;  // coordinates 2..C+1: sum -x_j + C T1, comparator -C T1
};

// Runs one learner through the instance. next_round(round, g, new_coordinate)
// returns the RoundContext of the current step.
template <typename Optimizer, typename NextRound>
Regret Run(const Instance& in, const Optimizer& optimizer, double epsilon, NextRound next_round) {
  std::vector<typename Optimizer::State> states(1 + in.c);
  for (auto& s : states) s.w = static_cast<float>(-kRadius);  // x = 0
  Regret regret;
  RoundContext round;
  for (uint64_t t = 1; t <= in.T(); ++t) {
    size_t i = 0;
    double g = 0;
    bool fresh = t == 1;
    if (t <= in.t0) {
      const double x = states[0].w + kRadius;
      regret.first += std::abs(x - epsilon);
      g = x > epsilon ? 1.0 : (x < epsilon ? -1.0 : 0.0);
    } else {
      i = 1 + (t - in.t0 - 1) / in.t1;
      fresh = (t - in.t0 - 1) % in.t1 == 0;
      regret.later -= states[i].w + kRadius;
      g = -1.0;
    }
    round = next_round(round, g, fresh);
    optimizer.Apply(states[i], g, round);
  }
  regret.later += static_cast<double>(in.c * in.t1);
  return regret;
}

// The counters LinearModel keeps: t, sum ||g||^2 and coordinates seen.
RoundContext LiveRound(RoundContext round, double g, bool fresh) {
  round.t += 1;
  round.sum_grad_norm_sq += g * g;
  round.coordinates += fresh;
  return round;
}

// Counters that make GlobalOgd's eta_t equal to its scale (see the header).
RoundContext FrozenRound(RoundContext, double, bool) {
  RoundContext round;
  round.t = 1;
  round.sum_grad_norm_sq = 0.5;
  round.coordinates = 1;
  return round;
}

void Emit(std::FILE* out, const Instance& in, const char* learner, double eta, const Regret& r) {
  const std::string row =
      absl::StrFormat("%d,%d,%d,%d,%d,%s,%.10g,%.10g,%.10g,%.10g\n", in.k, in.t0, in.c, in.t1,
                      in.T(), learner, eta, r.first, r.later, r.first + r.later);
  std::fputs(row.c_str(), stdout);
  if (out != nullptr) std::fputs(row.c_str(), out);
}

int Main() {
  const double epsilon = absl::GetFlag(FLAGS_epsilon);
  std::vector<double> etas;
  const int per_decade = absl::GetFlag(FLAGS_etas_per_decade);
  const double lo = std::log10(absl::GetFlag(FLAGS_eta_min));
  const double hi = std::log10(absl::GetFlag(FLAGS_eta_max));
  for (int j = 0; lo + j / static_cast<double>(per_decade) <= hi + 1e-9; ++j) {
    etas.push_back(std::pow(10.0, lo + j / static_cast<double>(per_decade)));
  }
  std::FILE* out = nullptr;
  if (const std::string path = absl::GetFlag(FLAGS_out); !path.empty()) {
    out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "theorem1: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  const char* header = "k,T0,C,T1,T,learner,eta,regret_first,regret_later,regret\n";
  std::fputs(header, stdout);
  if (out != nullptr) std::fputs(header, out);
  for (const std::string& text : absl::GetFlag(FLAGS_k)) {
    uint64_t k = 0;
    if (!absl::SimpleAtoi(text, &k) || k < 1 || k > 1000) {
      std::fprintf(stderr, "theorem1: --k value \"%s\" must be an integer in 1..1000\n",
                   text.c_str());
      return 2;
    }
    const Instance in{k, k * k * k, k, k};
    const PcOgd pc({.radius = kRadius, .scale = 1.0});
    Emit(out, in, "pc_ogd", 0, Run(in, pc, epsilon, LiveRound));
    const GlobalOgd global({.radius = kRadius, .scale = 1.0});
    Emit(out, in, "global_ogd", 0, Run(in, global, epsilon, LiveRound));
    const double theory_eta = std::sqrt(1.0 + in.c) / std::sqrt(static_cast<double>(in.T()));
    const GlobalOgd theory({.radius = kRadius, .scale = theory_eta});
    Emit(out, in, "global_theory", theory_eta, Run(in, theory, epsilon, FrozenRound));
    for (double eta : etas) {
      const GlobalOgd fixed({.radius = kRadius, .scale = eta});
      Emit(out, in, "global_fixed", eta, Run(in, fixed, epsilon, FrozenRound));
    }
  }
  if (out != nullptr && std::fclose(out) != 0) return 1;
  return 0;
}

}  // namespace
}  // namespace clickd::seed001

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::seed001::Main();
}
