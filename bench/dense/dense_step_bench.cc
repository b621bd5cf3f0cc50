// dense_step_bench: time per Update and StateBytes of the dense optimizers
// (core/optim/dense) as the dimension d and the sketch size tau grow.
//
// For each (optimizer, d, tau) it builds the optimizer, warms it up with
// tau + 5 rounds (the sketch is full from then on), then times `repeats`
// runs of `steps` rounds each on a pool of 64 pre-drawn N(0, 1) gradients
// (drawing them is not timed) and prints one tab-separated line:
//   name d tau steps repeats median_ns min_ns max_ns median_cpu_ns state_bytes
// where *_ns is wall time per round and median_cpu_ns this thread's CPU
// time per round (the machine is shared). The number of steps per run is chosen
// from the warm-up so that a run takes about --run_seconds (at least
// --min_steps). Sizes an optimizer cannot handle in --max_step_seconds
// per round (ADA-FULL and ONS at large d) are skipped with a note.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "bench/dense/dense_factory.h"

ABSL_FLAG(std::vector<std::string>, optimizers,
          std::vector<std::string>({"ada_diag", "ada_fd", "ada_fd_da", "fd_son", "ada_full",
                                    "ons"}),
          "optimizers to time");
ABSL_FLAG(std::vector<std::string>, dims, std::vector<std::string>({"500", "2000", "8000"}),
          "dimensions d");
ABSL_FLAG(std::vector<std::string>, taus, std::vector<std::string>({"10", "40"}),
          "sketch sizes (for ada_fd, ada_fd_da, fd_son)");
ABSL_FLAG(int, repeats, 7, "timed runs per configuration; the median is reported");
ABSL_FLAG(double, run_seconds, 0.3, "target length of one timed run");
ABSL_FLAG(int, min_steps, 2, "fewest rounds per timed run");
ABSL_FLAG(int, min_repeats, 3, "fewest timed runs, however slow");
ABSL_FLAG(double, max_step_seconds, 8.0,
          "skip a configuration whose warm-up round takes longer than this");
ABSL_FLAG(uint64_t, max_state_bytes, uint64_t{1} << 29,
          "skip d x d methods whose state would exceed this");

namespace clickd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// This thread's CPU time; the machine is shared, so it is reported beside
// the wall time.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<Eigen::VectorXd> GradientPool(int d) {
  std::mt19937_64 rng(d);
  std::normal_distribution<double> normal;
  std::vector<Eigen::VectorXd> pool(64, Eigen::VectorXd(d));
  for (auto& g : pool) {
    for (int i = 0; i < d; ++i) g(i) = normal(rng);
  }
  return pool;
}

void TimeOne(const std::string& name, int d, int tau) {
  const bool quadratic = name == "ada_full" || name == "ada_full_da" || name == "ons";
  if (quadratic && 2ull * 8 * d * d > absl::GetFlag(FLAGS_max_state_bytes)) {
    std::printf("# %s d=%d skipped: d x d state of %.2f GB over --max_state_bytes\n", name.c_str(),
                d, 2.0 * 8 * d * d / 1e9);
    return;
  }
  absl::StatusOr<std::unique_ptr<DenseOptimizer>> made = NewDenseOptimizer(name, 0.1, 1.0, tau, d);
  if (!made.ok()) {
    std::printf("# %s d=%d tau=%d skipped: %s\n", name.c_str(), d, tau,
                std::string(made.status().message()).c_str());
    return;
  }
  DenseOptimizer& opt = **made;
  const std::vector<Eigen::VectorXd> pool = GradientPool(d);
  // One round first, timed, to decide whether to go on and how many steps.
  Clock::time_point start = Clock::now();
  opt.Update(pool[0]);
  const double first = Seconds(start);
  if (first > absl::GetFlag(FLAGS_max_step_seconds)) {
    std::printf("# %s d=%d skipped: one round took %.1f s\n", name.c_str(), d, first);
    return;
  }
  // Enough rounds to fill the sketch; for the O(d^3) methods at most ~2 s.
  const int warmup = UsesTau(name) ? tau + 5 : std::clamp(static_cast<int>(2.0 / first), 2, 5);
  start = Clock::now();
  for (int t = 1; t < warmup; ++t) opt.Update(pool[t % pool.size()]);
  const double per_step = std::max(Seconds(start) / (warmup - 1), 1e-9);
  const int steps = std::max(absl::GetFlag(FLAGS_min_steps),
                             static_cast<int>(absl::GetFlag(FLAGS_run_seconds) / per_step));
  // Slow configurations get the minimum number of runs.
  const int repeats =
      per_step * steps > 2 ? absl::GetFlag(FLAGS_min_repeats) : absl::GetFlag(FLAGS_repeats);
  std::vector<double> ns, cpu_ns;
  size_t next = warmup;
  for (int r = 0; r < repeats; ++r) {
    start = Clock::now();
    const double cpu_start = CpuSeconds();
    for (int s = 0; s < steps; ++s) opt.Update(pool[next++ % pool.size()]);
    cpu_ns.push_back((CpuSeconds() - cpu_start) * 1e9 / steps);
    ns.push_back(Seconds(start) * 1e9 / steps);
  }
  std::sort(ns.begin(), ns.end());
  std::sort(cpu_ns.begin(), cpu_ns.end());
  std::printf("%s\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%llu\n", name.c_str(), d,
              UsesTau(name) ? tau : 0, steps, repeats, ns[ns.size() / 2], ns.front(), ns.back(),
              cpu_ns[cpu_ns.size() / 2], static_cast<unsigned long long>(opt.StateBytes()));
  std::fflush(stdout);
}

int Main() {
  std::printf(
      "name\td\ttau\tsteps\trepeats\tmedian_ns\tmin_ns\tmax_ns\tmedian_cpu_ns\tstate_bytes\n");
  for (const std::string& name : absl::GetFlag(FLAGS_optimizers)) {
    for (const std::string& d_text : absl::GetFlag(FLAGS_dims)) {
      int d = 0;
      if (!absl::SimpleAtoi(d_text, &d)) return 2;
      if (!UsesTau(name)) {
        TimeOne(name, d, 0);
        continue;
      }
      for (const std::string& tau_text : absl::GetFlag(FLAGS_taus)) {
        int tau = 0;
        if (!absl::SimpleAtoi(tau_text, &tau)) return 2;
        TimeOne(name, d, tau);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace clickd::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::bench::Main();
}
