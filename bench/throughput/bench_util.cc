#include "bench/throughput/bench_util.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_format.h"

namespace clickd::bench {

double Stopwatch::ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

double Samples::Median() const {
  if (values_.empty()) return 0;
  std::vector<double> sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  const size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

double Samples::Min() const {
  return values_.empty() ? 0 : *std::min_element(values_.begin(), values_.end());
}

double Samples::Max() const {
  return values_.empty() ? 0 : *std::max_element(values_.begin(), values_.end());
}

void PrintStageTable(const std::vector<StageResult>& stages) {
  std::printf("| %-44s | %9s | %7s | %27s | %9s | %11s | %14s | %14s |\n", "stage", "examples",
              "feat/ex", "wall ns/example med (range)", "CPU ns/ex", "CPU ns/feat",
              "examples/s CPU", "features/s CPU");
  std::printf(
      "|----------------------------------------------|-----------|---------|"
      "-----------------------------|-----------|-------------|----------------|"
      "----------------|\n");
  for (const StageResult& s : stages) {
    if (s.seconds.empty() || s.examples == 0) continue;
    const double n = static_cast<double>(s.examples);
    const double f = static_cast<double>(s.features);
    const double cpu = s.cpu_seconds.Median();
    const std::string wall = absl::StrFormat("%.0f (%.0f-%.0f)", s.seconds.Median() / n * 1e9,
                                             s.seconds.Min() / n * 1e9, s.seconds.Max() / n * 1e9);
    std::printf("| %-44s | %9s | %7.1f | %27s | %9.0f | %11s | %14s | %14s |\n", s.name.c_str(),
                Si(n).c_str(), f / n, wall.c_str(), cpu / n * 1e9,
                f > 0 ? absl::StrFormat("%.1f", cpu / f * 1e9).c_str() : "-", Si(n / cpu).c_str(),
                f > 0 ? Si(f / cpu).c_str() : "-");
  }
}

namespace {

// A "Name: N kB" field of /proc/self/status in bytes, 0 if absent.
uint64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(field.size())) * 1024;
  }
  return 0;
}

}  // namespace

uint64_t PeakRssBytes() { return StatusBytes("VmHWM:"); }

uint64_t ResidentBytes() { return StatusBytes("VmRSS:"); }

std::string MachineLoad() {
  std::ifstream loadavg("/proc/loadavg");
  std::string one, five, fifteen;
  loadavg >> one >> five >> fifteen;
  std::string result = "load average " + one + " " + five + " " + fifteen;
  std::ifstream pressure("/proc/pressure/cpu");
  std::string line;
  if (std::getline(pressure, line)) {  // "some avg10=0.00 avg60=0.00 ..."
    const size_t at = line.find("avg60=");
    if (at != std::string::npos) {
      result += ", cpu pressure (60 s) " + line.substr(at + 6, line.find(' ', at) - at - 6) + "%";
    }
  }
  return result;
}

std::string Si(double value) {
  if (value >= 1e9) return absl::StrFormat("%.2fG", value / 1e9);
  if (value >= 1e6) return absl::StrFormat("%.2fM", value / 1e6);
  if (value >= 1e3) return absl::StrFormat("%.1fk", value / 1e3);
  return absl::StrFormat("%.0f", value);
}

}  // namespace clickd::bench
