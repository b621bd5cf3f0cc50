// Timing, memory and table helpers shared by the throughput benchmarks.
// Plain values and free functions; nothing here is shared between threads.
#ifndef CLICKD_BENCH_THROUGHPUT_BENCH_UTIL_H_
#define CLICKD_BENCH_THROUGHPUT_BENCH_UTIL_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace clickd::bench {

// Wall-clock time and the whole process's CPU time since construction. On a
// shared machine the two differ by the time other work held the CPU.
class Stopwatch {
 public:
  Stopwatch() : wall_start_(std::chrono::steady_clock::now()), cpu_start_(ProcessCpuSeconds()) {}

  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  }
  double CpuSeconds() const { return ProcessCpuSeconds() - cpu_start_; }

 private:
  static double ProcessCpuSeconds();

  std::chrono::steady_clock::time_point wall_start_;
  double cpu_start_;
};

// Repeated measurements of one quantity.
class Samples {
 public:
  void Add(double value) { values_.push_back(value); }
  bool empty() const { return values_.empty(); }
  double Median() const;
  double Min() const;
  double Max() const;

 private:
  std::vector<double> values_;
};

// One timed stage: the work per repetition and the seconds each repetition took.
struct StageResult {
  explicit StageResult(std::string name = "", uint64_t examples = 0, uint64_t features = 0)
      : name(std::move(name)), examples(examples), features(features) {}

  void Add(double wall, double cpu) {
    seconds.Add(wall);
    cpu_seconds.Add(cpu);
  }
  void Add(const Stopwatch& clock) { Add(clock.Seconds(), clock.CpuSeconds()); }

  std::string name;
  uint64_t examples = 0;  // per repetition
  uint64_t features = 0;  // per repetition, as the stage counts them
  Samples seconds;        // wall clock
  Samples cpu_seconds;    // process CPU time (all threads)
};

// Prints stages as a Markdown table: wall-clock ns/example (median, min, max
// over the repetitions), then ns/example, ns/feature, examples/s and
// features/s from the median CPU time, which on a shared machine leaves out
// the time other processes held the CPU.
void PrintStageTable(const std::vector<StageResult>& stages);

// The process's peak resident set (VmHWM from /proc/self/status), 0 if unknown.
uint64_t PeakRssBytes();
// The process's resident set now (VmRSS), 0 if unknown.
uint64_t ResidentBytes();

// "load average 1.0 0.9 0.8, cpu pressure 12.3%": what else the machine was
// doing (/proc/loadavg; the share of the last 60 s in which some runnable
// task waited for a CPU, from /proc/pressure/cpu).
std::string MachineLoad();

// Formats 15600000 as "15.6M".
std::string Si(double value);

}  // namespace clickd::bench

#endif  // CLICKD_BENCH_THROUGHPUT_BENCH_UTIL_H_
