// vw_loadgen: the load generator for Vowpal Wabbit's daemon
// (`vw --daemon`) that bench/vw_compare/run.sh measures beside
// `clickctl loadgen --method=predict`.
//
// Its requests are clickctl loadgen's (SyntheticRequests: the same seed,
// pool size, namespaces and feature names "a<j>=<v>" / "u<j>=<v>"), written
// as VW text: one line per candidate, `|user <context> |ad <candidate>`.
// VW has no shared context for plain examples, so every line repeats the
// context's features, as a VW user would send them.
//
//   vw_loadgen --teach_out=FILE --requests=K [shape]   # K labeled Update requests, VW text
//   vw_loadgen --port=P --connections=N [shape]        # closed loop against the daemon
//
// Closed loop: N threads, each with its own TCP connection to 127.0.0.1:P,
// keep one request (all its candidate lines) in flight: write the request,
// read one prediction line per candidate, repeat. VW's daemon serves one
// connection per child process, so the daemon needs --num_children N.
// Prints one JSON line like clickctl loadgen's. Threads share nothing but
// the immutable request pool; each keeps its own counts and latencies,
// merged after they are joined.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "client/clickctl/loadgen_requests.h"

ABSL_FLAG(int, port, 0, "the daemon's port on 127.0.0.1");
ABSL_FLAG(int, connections, 1, "connections, each with one request in flight");
ABSL_FLAG(double, duration_s, 5, "measured seconds");
ABSL_FLAG(double, warmup_s, 1, "seconds before the measurement (not counted)");
ABSL_FLAG(int, context_features, 0, "context features per request (0: none)");
ABSL_FLAG(int, candidates, 100, "candidates per request (lines per request)");
ABSL_FLAG(int, candidate_features, 40, "features per candidate");
ABSL_FLAG(uint64_t, request_seed, 1, "seed of the synthetic requests (clickctl loadgen's)");
ABSL_FLAG(std::string, teach_out, "", "write labeled lines of --requests Update requests here");
ABSL_FLAG(uint64_t, requests, 0, "with --teach_out: how many Update requests");

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

void AppendNamespace(const v1::Example& example, std::string* line) {
  for (const v1::Namespace& ns : example.namespaces()) {
    *line += '|';
    *line += ns.name();
    for (const v1::Feature& f : ns.features()) {
      *line += ' ';
      *line += f.name();
    }
    *line += ' ';
  }
}

// Returns one VW line per candidate of `request`, context first.
std::string PredictText(const v1::PredictRequest& request) {
  std::string text;
  for (const v1::Example& candidate : request.candidates()) {
    AppendNamespace(request.context(), &text);
    AppendNamespace(candidate, &text);
    text.back() = '\n';
  }
  return text;
}

// Returns one labeled VW line (label 1 or -1) per example of `request`.
std::string UpdateText(const v1::UpdateRequest& request) {
  std::string text;
  auto add = [&](const v1::Example* context, const v1::LabeledExample& e) {
    text += e.label() > 0 ? "1 " : "-1 ";
    if (context != nullptr) AppendNamespace(*context, &text);
    AppendNamespace(e.example(), &text);
    text.back() = '\n';
  };
  for (const v1::Impression& impression : request.impressions()) {
    for (const v1::LabeledExample& e : impression.candidates()) add(&impression.context(), e);
  }
  for (const v1::LabeledExample& e : request.examples()) add(nullptr, e);
  return text;
}

RequestShape ShapeFromFlags() {
  RequestShape shape;
  shape.context_features = absl::GetFlag(FLAGS_context_features);
  shape.candidates = absl::GetFlag(FLAGS_candidates);
  shape.candidate_features = absl::GetFlag(FLAGS_candidate_features);
  return shape;
}

int WriteTeach(const std::string& path) {
  const RequestShape shape = ShapeFromFlags();
  const SyntheticRequests requests(shape, absl::GetFlag(FLAGS_request_seed));
  std::ofstream out(path);
  for (uint64_t i = 0; i < absl::GetFlag(FLAGS_requests) && out; ++i) {
    out << UpdateText(requests.Update("default", i));
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "vw_loadgen: cannot write %s\n", path.c_str());
    return 1;
  }
  return 0;
}

struct ThreadResult {
  uint64_t requests = 0;  // measured, answered in full
  uint64_t warmup_requests = 0;
  uint64_t errors = 0;
  uint64_t reads = 0;  // recv calls that returned data, warmup included
  std::vector<double> latencies_us;
};

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A daemon that stops answering ends the run instead of hanging it.
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `text` and reads `lines` answer lines; false on any socket error.
bool RoundTrip(int fd, const std::string& text, int lines, std::string* buffer, uint64_t* reads) {
  for (size_t sent = 0; sent < text.size();) {
    const ssize_t n = send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  int seen = 0;
  while (seen < lines) {
    const ssize_t n = recv(fd, buffer->data(), buffer->size(), 0);
    if (n <= 0) return false;
    ++*reads;
    seen += static_cast<int>(std::count(buffer->data(), buffer->data() + n, '\n'));
  }
  return seen == lines;  // one request in flight: never more lines than asked
}

void RunConnection(int port, const std::vector<std::string>& pool, int lines, uint64_t first,
                   Clock::time_point measure_from, Clock::time_point end, ThreadResult* result) {
  const int fd = Connect(port);
  if (fd < 0) {
    ++result->errors;
    return;
  }
  std::string buffer(1 << 16, '\0');
  for (uint64_t i = first;; ++i) {
    const Clock::time_point start = Clock::now();
    if (start >= end) break;
    if (!RoundTrip(fd, pool[i % pool.size()], lines, &buffer, &result->reads)) {
      ++result->errors;
      break;
    }
    if (start < measure_from) {
      ++result->warmup_requests;
      continue;
    }
    ++result->requests;
    result->latencies_us.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  close(fd);
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double Percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t k = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[k];
}

int RunLoad() {
  const RequestShape shape = ShapeFromFlags();
  const SyntheticRequests requests(shape, absl::GetFlag(FLAGS_request_seed));
  const uint64_t pool_size =
      PoolSize(static_cast<uint64_t>(shape.context_features) +
               static_cast<uint64_t>(shape.candidates) * std::max(shape.candidate_features, 1));
  std::vector<std::string> pool;
  pool.reserve(pool_size);
  for (uint64_t i = 0; i < pool_size; ++i) pool.push_back(PredictText(requests.Predict("", i)));

  const int connections = std::clamp(absl::GetFlag(FLAGS_connections), 1, 256);
  const double duration = std::clamp(absl::GetFlag(FLAGS_duration_s), 0.01, 600.0);
  const double warmup = std::clamp(absl::GetFlag(FLAGS_warmup_s), 0.0, 600.0);
  const Clock::time_point t0 = Clock::now();
  const auto measure_from =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(duration));
  const double cpu0 = CpuSeconds();
  std::vector<ThreadResult> results(static_cast<size_t>(connections));
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back(RunConnection, absl::GetFlag(FLAGS_port), std::cref(pool),
                         shape.candidates, static_cast<uint64_t>(c) * 131, measure_from, end,
                         &results[static_cast<size_t>(c)]);
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - measure_from).count();
  const double cpu = CpuSeconds() - cpu0;

  ThreadResult all;
  for (ThreadResult& r : results) {
    all.requests += r.requests;
    all.warmup_requests += r.warmup_requests;
    all.errors += r.errors;
    all.reads += r.reads;
    all.latencies_us.insert(all.latencies_us.end(), r.latencies_us.begin(), r.latencies_us.end());
  }
  std::sort(all.latencies_us.begin(), all.latencies_us.end());
  const double rate = seconds > 0 ? static_cast<double>(all.requests) / seconds : 0;
  const uint64_t calls = all.requests + all.warmup_requests;
  std::printf(
      "{\"method\":\"vw_daemon\",\"mode\":\"closed\",\"concurrency\":%d,\"context_features\":%d,"
      "\"candidates\":%d,\"candidate_features\":%d,\"duration_s\":%g,\"warmup_s\":%g,"
      "\"requests\":%llu,\"errors\":%llu,\"warmup_requests\":%llu,\"seconds\":%.6f,"
      "\"rate\":%.3f,\"candidates_per_second\":%.3f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
      "\"p999_us\":%.1f,\"client_cpu_us_per_call\":%.3f,\"client_cpu_share\":%.4f,\"reads_per_"
      "request\":%.1f}\n",
      connections, shape.context_features, shape.candidates, shape.candidate_features, duration,
      warmup, static_cast<unsigned long long>(all.requests),
      static_cast<unsigned long long>(all.errors),
      static_cast<unsigned long long>(all.warmup_requests), seconds, rate, rate * shape.candidates,
      Percentile(all.latencies_us, 0.5), Percentile(all.latencies_us, 0.99),
      Percentile(all.latencies_us, 0.999), calls > 0 ? cpu * 1e6 / static_cast<double>(calls) : 0.0,
      cpu / std::chrono::duration<double>(Clock::now() - t0).count(),
      calls > 0 ? static_cast<double>(all.reads) / static_cast<double>(calls) : 0.0);
  return all.errors > 0 ? 1 : 0;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_teach_out).empty()) {
    return clickd::WriteTeach(absl::GetFlag(FLAGS_teach_out));
  }
  if (absl::GetFlag(FLAGS_port) <= 0) {
    std::fprintf(stderr, "vw_loadgen: give --port=P (or --teach_out=FILE --requests=K)\n");
    return 2;
  }
  return clickd::RunLoad();
}
