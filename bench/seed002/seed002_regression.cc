// seed002_regression: seed 002 section 4.1 (Wan, Wei & Zhang), online
// regression with the absolute loss on the synthetic stream of
// regression_data.h, T = 10,000, d = 500, tau = 10, with eta and delta
// searched over the paper's grid {1e-4, 1e-3, ..., 100}.
//
// Regret is against beta_*, the vector that generated y: its loss is 0 in
// every round, and no comparator has less, so it is the best fixed
// comparator in hindsight and the regret is the learner's cumulative loss
// (the program computes beta_*'s loss and prints it, 0 by construction).
//
// Modes:
//   --mode=grid      runs the real optimizers (--algos) at every grid point,
//                    one after the other, timing each run. "radagrad" (not
//                    in the default list; run.sh runs it on its own) is
//                    random: at each grid point it runs --radagrad_runs
//                    times with projection seeds 1, 2, ..., and its row is
//                    the mean (seed 002 averages RADAGRAD over 5 runs).
//   --mode=lockstep  ADA-FULL (both forms) at every grid point in one pass.
//                    With the absolute loss every gradient is g_t = +-x_t,
//                    so g_t g_t^T = x_t x_t^T and G_t is the same for every
//                    learner, whatever its eta, delta or weights. The pass
//                    eigendecomposes G_t once per round and applies
//                    ApplyAdaFullInverse (the function the ada_full
//                    optimizer itself uses) to all 98 learners' vectors.
//                    The arithmetic per learner is the optimizer's.
//   --mode=full_class runs the real ada_full optimizer at one (eta, delta)
//                    for --rounds rounds: its time per round, and its
//                    cumulative losses to compare with the lockstep's.
//
// Output: <out>.grid.csv (algo,eta,delta,final_loss,seconds,diverged) and
// <out>.curves.csv (algo,eta,delta,t,cum_loss every --curve_every rounds),
// plus a summary on stdout. For radagrad these hold the mean over its runs
// (final loss, curve, and seconds per run), and <out>.runs.csv and
// <out>.run_curves.csv each run by seed; stdout adds the runs' min and max.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "Eigen/Eigenvalues"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "bench/dense/dense_factory.h"
#include "bench/seed002/regression_data.h"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/radagrad.h"

ABSL_FLAG(std::string, mode, "grid", "grid, lockstep or full_class");
ABSL_FLAG(std::vector<std::string>, algos,
          std::vector<std::string>({"ada_fd_da", "ada_diag_da", "ada_fd", "ada_diag", "fd_son"}),
          "grid mode: optimizers to run");
ABSL_FLAG(std::vector<std::string>, etas,
          std::vector<std::string>({"1e-4", "1e-3", "1e-2", "1e-1", "1", "10", "100"}),
          "eta grid (seed 002: {1e-4, 1e-3, ..., 100})");
ABSL_FLAG(std::vector<std::string>, deltas,
          std::vector<std::string>({"1e-4", "1e-3", "1e-2", "1e-1", "1", "10", "100"}),
          "delta grid");
ABSL_FLAG(int, d, 500, "dimension");
ABSL_FLAG(int, T, 10000, "rounds");
ABSL_FLAG(int, tau, 10, "sketch size for ada_fd, ada_fd_da, fd_son; projection rows for radagrad");
ABSL_FLAG(int, radagrad_runs, 5,
          "radagrad: runs per grid point (projection seeds 1..n), averaged (seed 002: 5)");
ABSL_FLAG(double, lambda0, 100, "Sigma's eigenvalues lambda0 j^-alpha");
ABSL_FLAG(double, alpha, 2, "Sigma's eigenvalues lambda0 j^-alpha");
ABSL_FLAG(bool, random_basis, true, "Sigma's eigenvectors: Haar-random (true) or the axes");
ABSL_FLAG(uint64_t, seed, 1, "data seed");
ABSL_FLAG(int, curve_every, 100, "record the cumulative loss every this many rounds");
ABSL_FLAG(double, eta, 1, "full_class mode: eta");
ABSL_FLAG(double, delta, 1, "full_class mode: delta");
ABSL_FLAG(std::string, full_algo, "ada_full", "full_class mode: ada_full or ada_full_da");
ABSL_FLAG(int, rounds, 500, "full_class mode: rounds to run");
ABSL_FLAG(std::string, out, "", "output prefix; empty: stdout summary only");

namespace clickd::seed002 {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of this thread: the machine is shared, so wall time depends on
// the load; both are recorded.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<double> ParseList(const std::vector<std::string>& texts) {
  std::vector<double> out;
  for (const std::string& s : texts) {
    double v = 0;
    if (!absl::SimpleAtod(s, &v)) {
      std::fprintf(stderr, "not a number: %s\n", s.c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

struct Run {
  std::string algo;
  double eta = 0, delta = 0;
  double cum_loss = 0;
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // this thread's CPU time
  bool diverged = false;
  std::vector<double> curve;  // cumulative loss after every curve_every rounds
  uint64_t seed = 0;          // radagrad's projection seed; 0 for the others
};

class Output {
 public:
  explicit Output(const std::string& prefix) : prefix_(prefix) {
    if (prefix.empty()) return;
    grid_ = std::fopen((prefix + ".grid.csv").c_str(), "w");
    curves_ = std::fopen((prefix + ".curves.csv").c_str(), "w");
    if (grid_ == nullptr || curves_ == nullptr) {
      std::fprintf(stderr, "cannot write %s.*.csv\n", prefix.c_str());
      std::exit(1);
    }
    std::fprintf(grid_, "algo,eta,delta,final_loss,seconds,cpu_seconds,diverged\n");
    std::fprintf(curves_, "algo,eta,delta,t,cum_loss\n");
  }
  ~Output() {
    for (std::FILE* f : {grid_, curves_, runs_, run_curves_}) {
      if (f != nullptr) std::fclose(f);
    }
  }

  void Write(const Run& r, int every) {
    std::printf("%-12s eta=%-7g delta=%-7g loss=%-14.6g %8.2f s (cpu %.2f s)%s\n", r.algo.c_str(),
                r.eta, r.delta, r.cum_loss, r.seconds, r.cpu_seconds,
                r.diverged ? "  diverged" : "");
    std::fflush(stdout);
    if (grid_ == nullptr) return;
    std::fprintf(grid_, "%s,%g,%g,%.17g,%.6f,%.6f,%d\n", r.algo.c_str(), r.eta, r.delta, r.cum_loss,
                 r.seconds, r.cpu_seconds, r.diverged ? 1 : 0);
    for (size_t i = 0; i < r.curve.size(); ++i) {
      std::fprintf(curves_, "%s,%g,%g,%zu,%.17g\n", r.algo.c_str(), r.eta, r.delta,
                   (i + 1) * static_cast<size_t>(every), r.curve[i]);
    }
    std::fflush(grid_);
    std::fflush(curves_);
  }

  // One of the runs a randomized algorithm's row averages. The files are
  // opened on first use, so the deterministic algorithms' outputs are as
  // before.
  void WriteSeededRun(const Run& r, int every) {
    if (prefix_.empty()) return;
    if (runs_ == nullptr) {
      runs_ = std::fopen((prefix_ + ".runs.csv").c_str(), "w");
      run_curves_ = std::fopen((prefix_ + ".run_curves.csv").c_str(), "w");
      if (runs_ == nullptr || run_curves_ == nullptr) {
        std::fprintf(stderr, "cannot write %s.run*.csv\n", prefix_.c_str());
        std::exit(1);
      }
      std::fprintf(runs_, "algo,eta,delta,seed,final_loss,seconds,cpu_seconds,diverged\n");
      std::fprintf(run_curves_, "algo,eta,delta,seed,t,cum_loss\n");
    }
    std::fprintf(runs_, "%s,%g,%g,%llu,%.17g,%.6f,%.6f,%d\n", r.algo.c_str(), r.eta, r.delta,
                 static_cast<unsigned long long>(r.seed), r.cum_loss, r.seconds, r.cpu_seconds,
                 r.diverged ? 1 : 0);
    for (size_t i = 0; i < r.curve.size(); ++i) {
      std::fprintf(run_curves_, "%s,%g,%g,%llu,%zu,%.17g\n", r.algo.c_str(), r.eta, r.delta,
                   static_cast<unsigned long long>(r.seed), (i + 1) * static_cast<size_t>(every),
                   r.curve[i]);
    }
    std::fflush(runs_);
    std::fflush(run_curves_);
  }

 private:
  std::string prefix_;
  std::FILE* grid_ = nullptr;
  std::FILE* curves_ = nullptr;
  std::FILE* runs_ = nullptr;  // per-seed runs of radagrad
  std::FILE* run_curves_ = nullptr;
};

// bench::NewDenseOptimizer's methods, and radagrad, which is only here
// (it is no model optimizer; see core/optim/dense/radagrad.h).
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewOptimizer(const std::string& algo, double eta,
                                                             double delta, int tau, int dim,
                                                             uint64_t seed) {
  if (algo == "radagrad") {
    return Radagrad::Create({.eta = eta, .delta = delta, .tau = tau, .seed = seed}, dim);
  }
  return bench::NewDenseOptimizer(algo, eta, delta, tau, dim);
}

// One learner through the stream: suffers |beta_t^T x_t - y_t|, then
// updates with g_t = s x_t. Stops early once the loss is not finite.
// `seed` draws radagrad's projection; the others ignore it.
Run RunOptimizer(const std::string& algo, double eta, double delta, int tau, int rounds,
                 const RegressionData& data, int every, uint64_t seed = 0) {
  Run run;
  run.algo = algo;
  run.eta = eta;
  run.delta = delta;
  run.seed = seed;
  absl::StatusOr<std::unique_ptr<DenseOptimizer>> made =
      NewOptimizer(algo, eta, delta, tau, static_cast<int>(data.x.rows()), seed);
  if (!made.ok()) {
    std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str());
    std::exit(2);
  }
  DenseOptimizer& opt = **made;
  const Clock::time_point start = Clock::now();
  const double cpu_start = CpuSeconds();
  for (int t = 0; t < rounds; ++t) {
    const LossAndSign ls = AbsoluteLoss(data, t, opt.weights());
    run.cum_loss += ls.loss;
    if (!std::isfinite(run.cum_loss)) {
      run.diverged = true;
      run.cum_loss = std::numeric_limits<double>::infinity();
      break;
    }
    opt.Update(ls.sign * data.x.col(t));
    if ((t + 1) % every == 0) run.curve.push_back(run.cum_loss);
  }
  run.seconds = Seconds(start);
  run.cpu_seconds = CpuSeconds() - cpu_start;
  return run;
}

// radagrad at one grid point: --radagrad_runs runs with projection seeds
// 1, 2, ..., each written to the per-run files; returns their mean (final
// loss, curve, wall and CPU seconds per run), diverged if any run did.
Run RunAveraged(const std::string& algo, double eta, double delta, int tau,
                const RegressionData& data, int every, Output& out) {
  const int n = absl::GetFlag(FLAGS_radagrad_runs);
  Run mean;
  mean.algo = algo;
  mean.eta = eta;
  mean.delta = delta;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  size_t curve_len = std::numeric_limits<size_t>::max();
  std::vector<Run> runs;
  for (int seed = 1; seed <= n; ++seed) {
    runs.push_back(RunOptimizer(algo, eta, delta, tau, static_cast<int>(data.y.size()), data, every,
                                static_cast<uint64_t>(seed)));
    const Run& r = runs.back();
    out.WriteSeededRun(r, every);
    mean.cum_loss += r.cum_loss / n;
    mean.seconds += r.seconds / n;
    mean.cpu_seconds += r.cpu_seconds / n;
    mean.diverged = mean.diverged || r.diverged;
    lo = std::min(lo, r.cum_loss);
    hi = std::max(hi, r.cum_loss);
    curve_len = std::min(curve_len, r.curve.size());
  }
  // A diverged run stops its curve early; the mean curve stops with it.
  mean.curve.assign(curve_len, 0.0);
  for (const Run& r : runs) {
    for (size_t i = 0; i < curve_len; ++i) mean.curve[i] += r.curve[i] / n;
  }
  std::printf("# %s eta=%g delta=%g over %d runs: mean %.6g, min %.6g, max %.6g\n", algo.c_str(),
              eta, delta, n, mean.cum_loss, lo, hi);
  return mean;
}

int Grid(const RegressionData& data, Output& out) {
  const int every = absl::GetFlag(FLAGS_curve_every);
  const int tau = absl::GetFlag(FLAGS_tau);
  for (const std::string& algo : absl::GetFlag(FLAGS_algos)) {
    for (double eta : ParseList(absl::GetFlag(FLAGS_etas))) {
      for (double delta : ParseList(absl::GetFlag(FLAGS_deltas))) {
        out.Write(algo == "radagrad" ? RunAveraged(algo, eta, delta, tau, data, every, out)
                                     : RunOptimizer(algo, eta, delta, tau,
                                                    static_cast<int>(data.y.size()), data, every),
                  every);
      }
    }
  }
  return 0;
}

// ADA-FULL learners sharing G_t; see the file comment.
struct FullLearner {
  Run run;
  bool dual_averaging = false;
  Eigen::VectorXd beta, gbar;
  double sign = 0;
};

int Lockstep(const RegressionData& data, Output& out) {
  const int d = static_cast<int>(data.x.rows());
  const int T = static_cast<int>(data.y.size());
  const int every = absl::GetFlag(FLAGS_curve_every);
  const std::vector<double> etas = ParseList(absl::GetFlag(FLAGS_etas));
  const std::vector<double> deltas = ParseList(absl::GetFlag(FLAGS_deltas));
  // groups[k]: the learners with delta = deltas[k], so that one call of
  // ApplyAdaFullInverse serves each group.
  std::vector<std::vector<FullLearner>> groups(deltas.size());
  for (size_t k = 0; k < deltas.size(); ++k) {
    for (bool da : {true, false}) {
      for (double eta : etas) {
        FullLearner l;
        l.run.algo = da ? "ada_full_da" : "ada_full";
        l.run.eta = eta;
        l.run.delta = deltas[k];
        l.dual_averaging = da;
        l.beta = Eigen::VectorXd::Zero(d);
        l.gbar = Eigen::VectorXd::Zero(d);
        groups[k].push_back(std::move(l));
      }
    }
  }
  Eigen::MatrixXd g_outer = Eigen::MatrixXd::Zero(d, d);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(d);
  // CPU seconds in the eigendecompositions and in the applications.
  double eig_seconds = 0, apply_seconds = 0, first_block_eig = 0;
  const Clock::time_point start = Clock::now();
  const double cpu_start = CpuSeconds();
  for (int t = 0; t < T; ++t) {
    const auto x = data.x.col(t);
    for (auto& group : groups) {
      for (FullLearner& l : group) {
        if (l.run.diverged) continue;
        const LossAndSign ls = AbsoluteLoss(data, t, l.beta);
        l.run.cum_loss += ls.loss;
        l.sign = ls.sign;
        if (!std::isfinite(l.run.cum_loss)) {
          l.run.diverged = true;
          l.run.cum_loss = std::numeric_limits<double>::infinity();
        }
      }
    }
    // g g^T = (s x)(s x)^T = x x^T bit for bit, as in the optimizer.
    double phase = CpuSeconds();
    g_outer.noalias() += x * x.transpose();
    eig.compute(g_outer);
    eig_seconds += CpuSeconds() - phase;
    if (t == 999) first_block_eig = eig_seconds;  // seconds over 1000 rounds = ms/round
    phase = CpuSeconds();
    for (size_t k = 0; k < groups.size(); ++k) {
      Eigen::MatrixXd v(d, groups[k].size());
      for (size_t j = 0; j < groups[k].size(); ++j) {
        FullLearner& l = groups[k][j];
        if (l.dual_averaging) l.gbar += l.sign * x;
        if (l.run.diverged) {
          v.col(j).setZero();
        } else {
          v.col(j) = l.dual_averaging ? Eigen::VectorXd(l.gbar) : Eigen::VectorXd(l.sign * x);
        }
      }
      const Eigen::MatrixXd h_inv_v =
          ApplyAdaFullInverse(eig.eigenvectors(), eig.eigenvalues(), deltas[k], v);
      for (size_t j = 0; j < groups[k].size(); ++j) {
        FullLearner& l = groups[k][j];
        if (l.run.diverged) continue;
        if (l.dual_averaging) {
          l.beta = -l.run.eta * h_inv_v.col(j);
        } else {
          l.beta -= l.run.eta * h_inv_v.col(j);
        }
        if ((t + 1) % every == 0) l.run.curve.push_back(l.run.cum_loss);
      }
    }
    apply_seconds += CpuSeconds() - phase;
    if ((t + 1) % 1000 == 0) {
      std::fprintf(stderr, "lockstep: round %d, %.0f s wall, eig %.0f s cpu\n", t + 1,
                   Seconds(start), eig_seconds);
    }
  }
  const double total = Seconds(start);
  const double total_cpu = CpuSeconds() - cpu_start;
  int learners = 0;
  for (const auto& group : groups) learners += static_cast<int>(group.size());
  for (auto& group : groups) {
    for (FullLearner& l : group) {
      // Each learner's own share, in CPU time: the eigendecompositions it
      // would do alone plus its part of the applications (no wall time).
      l.run.cpu_seconds = eig_seconds + apply_seconds / learners;
      l.run.seconds = std::numeric_limits<double>::quiet_NaN();
      out.Write(l.run, every);
    }
  }
  std::printf(
      "# lockstep: %d learners, %d rounds, %.1f s wall, %.1f s cpu; eigendecompositions %.1f s "
      "cpu (%.1f ms/round; rounds 1-1000: %.1f ms/round), applications %.1f s cpu\n",
      learners, T, total, total_cpu, eig_seconds, 1e3 * eig_seconds / T, first_block_eig,
      apply_seconds);
  // The spectrum the sketch has to capture: top eigenvalues of G_T / T.
  const Eigen::VectorXd lambda = eig.eigenvalues().reverse() / T;
  std::printf("# eig(G_T)/T top 12:");
  for (int i = 0; i < std::min(12, d); ++i) std::printf(" %.4g", lambda(i));
  const double trace = lambda.sum();
  std::printf("\n# trace share of the top 1, 9, 10, 20: %.4f %.4f %.4f %.4f\n",
              lambda.head(1).sum() / trace, lambda.head(std::min(9, d)).sum() / trace,
              lambda.head(std::min(10, d)).sum() / trace,
              lambda.head(std::min(20, d)).sum() / trace);
  return 0;
}

int FullClass(const RegressionData& data, Output& out) {
  const int every = absl::GetFlag(FLAGS_curve_every);
  Run run = RunOptimizer(absl::GetFlag(FLAGS_full_algo), absl::GetFlag(FLAGS_eta),
                         absl::GetFlag(FLAGS_delta), 0, absl::GetFlag(FLAGS_rounds), data, every);
  std::printf("# full_class: %s %d rounds in %.2f s wall, %.2f s cpu, %.1f ms/round cpu\n",
              run.algo.c_str(), absl::GetFlag(FLAGS_rounds), run.seconds, run.cpu_seconds,
              1e3 * run.cpu_seconds / absl::GetFlag(FLAGS_rounds));
  out.Write(run, every);
  return 0;
}

int Main() {
  RegressionConfig config{.d = absl::GetFlag(FLAGS_d),
                          .T = absl::GetFlag(FLAGS_T),
                          .lambda0 = absl::GetFlag(FLAGS_lambda0),
                          .alpha = absl::GetFlag(FLAGS_alpha),
                          .random_basis = absl::GetFlag(FLAGS_random_basis),
                          .seed = absl::GetFlag(FLAGS_seed)};
  const Clock::time_point start = Clock::now();
  const RegressionData data = MakeRegressionData(config);
  double comparator = 0;
  for (int t = 0; t < config.T; ++t) comparator += AbsoluteLoss(data, t, data.beta_star).loss;
  std::printf(
      "# data: d=%d T=%d lambda0=%g alpha=%g basis=%s seed=%llu (%.1f s); "
      "comparator beta_* cumulative loss = %g\n",
      config.d, config.T, config.lambda0, config.alpha, config.random_basis ? "random" : "identity",
      static_cast<unsigned long long>(config.seed), Seconds(start), comparator);
  Output out(absl::GetFlag(FLAGS_out));
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "grid") return Grid(data, out);
  if (mode == "lockstep") return Lockstep(data, out);
  if (mode == "full_class") return FullClass(data, out);
  std::fprintf(stderr, "unknown --mode=%s\n", mode.c_str());
  return 2;
}

}  // namespace
}  // namespace clickd::seed002

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::seed002::Main();
}
