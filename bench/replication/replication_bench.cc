// replication_bench: what --replication=jetstream costs, against real
// processes (docs/performance_replication.md has the figures;
// bench/replication/run.sh runs it). One run starts a 3-node nats-server
// JetStream cluster on loopback (tests/nats_cluster.h), 3 clickd replicas
// (--replication=jetstream, --nats_replicas=3) and one clickd with the local
// file log (--update_log_sync=every_request), and measures, in this order:
//
//   throughput  closed-loop Update throughput (updates/s, examples/s) and
//               ack latency for each (writers, batch size) cell: the file
//               log's server and the 3 replicas (writers spread over them),
//               alternating which goes first, --repeats runs each; reported
//               as replicated / file-log ratios.
//   lag         publish-to-applied-everywhere: a prober sends an Update to
//               replica A (rotating), and as soon as it is acknowledged with
//               model_version v sends Predict(min_model_version = v) to B
//               and C at once (asynchronously); each returns as soon as that
//               replica applied v (the server waits on a condition
//               variable). Lag = ack -> both answered. The floor of the
//               method is one Predict round trip, measured right after on B
//               (already applied). Under light load (the prober alone) and
//               heavy load (--heavy_writers writers of --heavy_batch).
//   predict     Predict latency (1 context + --candidates candidates, one
//               closed-loop caller) on replica C, idle, and while the heavy
//               writers write to A and B (so C only applies the stream);
//               and, as a control, on the file log's clickd (applying
//               nothing) under the same writers; alternating, --repeats
//               runs each.
//
// Every loop is bounded in count and in time. Processes are stopped by PID
// (they also get SIGKILL if this program dies).
//
// Usage: replication_bench --work_dir=DIR [--out=results.json] [--clickd=PATH]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/clickd_client.h"
#include "core/base/mutex.h"
#include "tests/nats_cluster.h"
#include "tests/server_process.h"

ABSL_FLAG(std::string, work_dir, "", "directory for the NATS stores and clickd data (a real disk)");
ABSL_FLAG(std::string, out, "", "where to write the results as JSON (empty: nowhere)");
ABSL_FLAG(std::string, clickd, "", "the clickd binary (empty: the one this build made)");
ABSL_FLAG(std::string, writers, "1,8", "concurrent writers of the throughput cells");
ABSL_FLAG(std::string, batch_sizes, "10,100", "examples per Update of the throughput cells");
ABSL_FLAG(double, seconds, 5, "seconds per throughput run and per Predict run");
ABSL_FLAG(int, repeats, 3, "runs of each cell (file log and replicated alternate)");
ABSL_FLAG(int, max_updates, 100000, "bound on the Updates of one writer in one run");
ABSL_FLAG(int, lag_probes, 300, "probes per lag phase");
ABSL_FLAG(double, lag_seconds, 30, "bound on the seconds of one lag phase");
ABSL_FLAG(int, probe_interval_ms, 20, "pause between lag probes");
ABSL_FLAG(int, heavy_writers, 8, "writers of the heavy load");
ABSL_FLAG(int, heavy_batch, 100, "examples per Update of the heavy load");
ABSL_FLAG(int, candidates, 40, "candidates per Predict");
ABSL_FLAG(int, max_predicts, 200000, "bound on the Predicts of one run");
ABSL_FLAG(std::string, replica_flags, "",
          "more clickd flags for the replicas, space-separated (such as "
          "--replication_apply_timeout=10s)");
ABSL_FLAG(bool, throughput_only, false, "measure only the throughput cells (part 1)");

namespace clickd {
namespace {

using ::clickd::testing::NatsCluster;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using Clock = std::chrono::steady_clock;

constexpr int kReplicas = 3;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat("load: ", one, " ", five, " ", fifteen, " (1/5/15 min)");
}

std::vector<int> IntList(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int value = 0;
    if (absl::SimpleAtoi(part, &value) && value > 0) out.push_back(value);
  }
  return out;
}

// Latency samples in microseconds.
class Samples {
 public:
  void Add(double micros) { values_.push_back(micros); }
  void Append(const Samples& other) {
    values_.insert(values_.end(), other.values_.begin(), other.values_.end());
  }
  size_t size() const { return values_.size(); }
  // Nearest-rank percentile, q in [0, 1]; 0 without samples.
  double Percentile(double q) const {
    if (values_.empty()) return 0;
    std::vector<double> sorted = values_;
    std::sort(sorted.begin(), sorted.end());
    size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()));
    return sorted[std::min(rank, sorted.size() - 1)];
  }
  std::string Summary() const {
    return absl::StrFormat("p50 %8.0f  p99 %8.0f  max %8.0f us (n=%d)", Percentile(0.5),
                           Percentile(0.99), Percentile(1.0), size());
  }
  std::string Json() const {
    return absl::StrFormat(R"({"n": %d, "p50_us": %.1f, "p99_us": %.1f, "max_us": %.1f})", size(),
                           Percentile(0.5), Percentile(0.99), Percentile(1.0));
  }

 private:
  std::vector<double> values_;
};

// Click-like examples: a user (100k), an ad (1000), a site (100), a
// position; about 1 in 20 clicked.
v1::UpdateRequest MakeUpdate(std::mt19937_64& rng, int examples) {
  v1::UpdateRequest request;
  request.set_model("default");
  for (int i = 0; i < examples; ++i) {
    const uint64_t user = rng() % 100000, ad = rng() % 1000, site = rng() % 100, pos = rng() % 5;
    v1::LabeledExample* e = request.add_examples();
    e->set_label(rng() % 20 == 0 ? 1.0f : 0.0f);
    for (auto [ns, name] : {std::pair<const char*, std::string>{"user", absl::StrCat("u", user)},
                            {"ad", absl::StrCat("a", ad)},
                            {"site", absl::StrCat("s", site)},
                            {"pos", absl::StrCat("p", pos)}}) {
      v1::Namespace* space = e->mutable_example()->add_namespaces();
      space->set_name(ns);
      space->add_features()->set_name(name);
    }
  }
  return request;
}

v1::PredictRequest MakePredict(int candidates, uint64_t min_version) {
  v1::PredictRequest request;
  request.set_model("default");
  request.set_min_model_version(min_version);
  for (auto [ns, name] : {std::pair<const char*, const char*>{"user", "u42"}, {"site", "s7"}}) {
    v1::Namespace* space = request.mutable_context()->add_namespaces();
    space->set_name(ns);
    space->add_features()->set_name(name);
  }
  for (int c = 0; c < candidates; ++c) {
    v1::Example* candidate = request.add_candidates();
    for (auto [ns, name] : {std::pair<const char*, std::string>{"ad", absl::StrCat("a", c)},
                            {"pos", absl::StrCat("p", c % 5)}}) {
      v1::Namespace* space = candidate->add_namespaces();
      space->set_name(ns);
      space->add_features()->set_name(name);
    }
  }
  return request;
}

// A unique idempotency key for every Update of the run (a reused key would
// be deduplicated by JetStream and learned once).
std::string NextKey() {
  static std::atomic<uint64_t> next{0};
  return absl::StrCat("bench-", getpid(), "-", next.fetch_add(1));
}

std::unique_ptr<ClickdClient> Connect(const std::string& address) {
  ClientOptions options;
  options.timeout = absl::Seconds(10);
  auto client = ClickdClient::Create(address, std::move(options));
  if (!client.ok()) {
    std::fprintf(stderr, "cannot connect to %s: %s\n", address.c_str(),
                 client.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(client);
}

// What a set of writers did.
struct WriteResult {
  uint64_t updates = 0;
  uint64_t examples = 0;
  uint64_t errors = 0;
  uint64_t max_version = 0;
  double seconds = 0;
  Samples ack;  // Update latency of every acknowledged Update
  std::string first_error;
};

// Closed-loop writers: writer i sends Updates of `batch` examples to
// targets[i % targets.size()] until `stop` is set, `seconds` pass or it
// sent `max_updates`. One connection per writer.
class Writers {
 public:
  Writers(const std::vector<std::string>& targets, int writers, int batch, double seconds,
          int max_updates)
      : results_(writers) {
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    start_ = Clock::now();
    for (int w = 0; w < writers; ++w) {
      threads_.emplace_back(
          [this, w, end, batch, max_updates, target = targets[w % targets.size()]] {
            WriteResult& r = results_[w];
            auto client = Connect(target);
            std::mt19937_64 rng(1000 + w);
            std::vector<v1::UpdateRequest> pool;
            for (int i = 0; i < 32; ++i) pool.push_back(MakeUpdate(rng, batch));
            for (int n = 0; n < max_updates && !stop_.load() && Clock::now() < end; ++n) {
              v1::UpdateRequest& request = pool[n % pool.size()];
              request.set_idempotency_key(NextKey());
              const auto t0 = Clock::now();
              auto response = client->Update(request);
              if (!response.ok()) {
                if (r.errors++ == 0) r.first_error = response.status().ToString();
                continue;
              }
              r.ack.Add(Micros(Clock::now() - t0));
              ++r.updates;
              r.examples += response->applied();
              r.max_version = std::max(r.max_version, response->model_version());
            }
          });
    }
  }

  // Stops the writers at once and sums their results.
  WriteResult Finish() {
    stop_.store(true);
    return Join();
  }

  // Waits until every writer reached its time or count bound and sums
  // their results.
  WriteResult Join() {
    for (std::thread& t : threads_) t.join();
    WriteResult total;
    total.seconds = Seconds(Clock::now() - start_);
    for (const WriteResult& r : results_) {
      total.updates += r.updates;
      total.examples += r.examples;
      total.errors += r.errors;
      total.max_version = std::max(total.max_version, r.max_version);
      total.ack.Append(r.ack);
      if (total.first_error.empty()) total.first_error = r.first_error;
    }
    return total;
  }

  ~Writers() {
    if (!threads_.empty() && threads_[0].joinable()) Finish();
  }

 private:
  std::atomic<bool> stop_{false};
  Clock::time_point start_;
  std::vector<WriteResult> results_;
  std::vector<std::thread> threads_;
};

// Waits (bounded) until every replica has applied `version`.
void Drain(const std::vector<std::unique_ptr<ClickdClient>>& replicas, uint64_t version) {
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  for (size_t i = 0; i < replicas.size(); ++i) {
    while (Clock::now() < give_up) {
      if (replicas[i]->Predict(MakePredict(1, version)).ok()) break;
    }
  }
}

// The processes of one run.
struct Fleet {
  std::unique_ptr<NatsCluster> nats;
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::unique_ptr<ServerProcess> file_log;
};

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> flags) {
  ServerOptions options;
  options.flags = std::move(flags);
  options.binary = absl::GetFlag(FLAGS_clickd);
  options.ready_timeout = std::chrono::seconds(90);
  auto server = ServerProcess::Start(std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "clickd did not start: %s\n", server.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(server);
}

Fleet StartFleet(const std::string& dir) {
  Fleet fleet;
  auto nats = NatsCluster::Start(dir + "/nats", 3);
  if (!nats.ok()) {
    std::fprintf(stderr, "NATS cluster did not start: %s\n", nats.status().ToString().c_str());
    std::exit(1);
  }
  fleet.nats = *std::move(nats);
  // No periodic snapshots during the run (they would land in random
  // measurements); --max_version_wait above any lag we expect.
  for (int i = 0; i < kReplicas; ++i) {
    std::vector<std::string> flags = {"--replication=jetstream",
                                      "--nats_url=" + fleet.nats->Urls(),
                                      "--nats_replicas=3",
                                      absl::StrCat("--replica_id=r", i),
                                      absl::StrCat("--data_dir=", dir, "/r", i),
                                      "--snapshot_interval=1h",
                                      "--max_version_wait=10s",
                                      "--shutdown_grace_seconds=2"};
    for (absl::string_view extra :
         absl::StrSplit(absl::GetFlag(FLAGS_replica_flags), ' ', absl::SkipEmpty())) {
      flags.emplace_back(extra);
    }
    fleet.replicas.push_back(StartServer(flags));
  }
  fleet.file_log = StartServer({"--data_dir=" + dir + "/file", "--update_log_sync=every_request",
                                "--snapshot_interval=1h", "--shutdown_grace_seconds=2"});
  return fleet;
}

std::vector<std::string> ReplicaAddresses(const Fleet& fleet) {
  std::vector<std::string> out;
  for (const auto& r : fleet.replicas) out.push_back(r->address());
  return out;
}

std::string CellJson(const char* system, int writers, int batch, int rep, const WriteResult& r) {
  return absl::StrFormat(
      R"({"system": "%s", "writers": %d, "batch": %d, "rep": %d, "updates": %d, )"
      R"("examples": %d, "errors": %d, "seconds": %.3f, "updates_per_s": %.1f, )"
      R"("examples_per_s": %.1f, "ack": %s})",
      system, writers, batch, rep, r.updates, r.examples, r.errors, r.seconds,
      r.updates / r.seconds, r.examples / r.seconds, r.ack.Json());
}

// Part 1: throughput and ack latency, file log vs replicated.
std::vector<std::string> RunThroughput(const Fleet& fleet,
                                       const std::vector<std::unique_ptr<ClickdClient>>& readers) {
  absl::PrintF("\n## 1. Update throughput, closed loop, %.0f s per run\n",
               absl::GetFlag(FLAGS_seconds));
  std::vector<std::string> json;
  const std::vector<std::string> replicas = ReplicaAddresses(fleet);
  const std::vector<std::string> file_log = {fleet.file_log->address()};
  for (int writers : IntList(absl::GetFlag(FLAGS_writers))) {
    for (int batch : IntList(absl::GetFlag(FLAGS_batch_sizes))) {
      double file_rate = 0, replicated_rate = 0;
      Samples file_ack, replicated_ack;
      for (int rep = 0; rep < absl::GetFlag(FLAGS_repeats); ++rep) {
        for (int k = 0; k < 2; ++k) {
          const bool replicated = (k + rep) % 2 == 1;  // alternate which goes first
          absl::PrintF("%s\n", LoadAverage().c_str());
          Writers run(replicated ? replicas : file_log, writers, batch,
                      absl::GetFlag(FLAGS_seconds), absl::GetFlag(FLAGS_max_updates));
          WriteResult r = run.Join();
          const char* name = replicated ? "replicated" : "file_log";
          absl::PrintF(
              "  %-10s writers %d batch %3d rep %d: %8.1f updates/s %9.0f examples/s  ack %s "
              "errors %d%s\n",
              name, writers, batch, rep, r.updates / r.seconds, r.examples / r.seconds,
              r.ack.Summary().c_str(), r.errors,
              r.first_error.empty() ? "" : (" " + r.first_error).c_str());
          json.push_back(CellJson(name, writers, batch, rep, r));
          (replicated ? replicated_rate : file_rate) += r.updates / r.seconds;
          (replicated ? replicated_ack : file_ack).Append(r.ack);
          if (replicated) Drain(readers, r.max_version);
        }
      }
      absl::PrintF(
          "  => writers %d batch %3d: replicated / file_log throughput %.2f; ack p50 %.2fx, "
          "p99 %.2fx\n",
          writers, batch, file_rate > 0 ? replicated_rate / file_rate : 0,
          file_ack.Percentile(0.5) > 0 ? replicated_ack.Percentile(0.5) / file_ack.Percentile(0.5)
                                       : 0,
          file_ack.Percentile(0.99) > 0
              ? replicated_ack.Percentile(0.99) / file_ack.Percentile(0.99)
              : 0);
    }
  }
  return json;
}

// Times until two async Predicts return.
class PairWait {
 public:
  void Done(int which) {
    MutexLock lock(&mu_);
    at_[which] = Clock::now();
    ok_[which] = true;
    cv_.SignalAll();
  }
  void Failed(int which, const absl::Status& status) {
    MutexLock lock(&mu_);
    at_[which] = Clock::now();
    error_ = status.ToString();
    cv_.SignalAll();
  }
  // Waits (bounded) until both answered; false on a failure or timeout.
  bool Wait(Clock::time_point* b, Clock::time_point* c, std::string* error) {
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    MutexLock lock(&mu_);
    while (!Answered() && Clock::now() < give_up) cv_.WaitFor(&mu_, give_up - Clock::now());
    *b = at_[0];
    *c = at_[1];
    *error = Answered() ? error_ : "timed out";
    return Answered() && ok_[0] && ok_[1];
  }

 private:
  bool Answered() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return at_[0] != Clock::time_point() && at_[1] != Clock::time_point();
  }

  Mutex mu_;
  CondVar cv_;
  Clock::time_point at_[2] ABSL_GUARDED_BY(mu_);
  bool ok_[2] ABSL_GUARDED_BY(mu_) = {false, false};
  std::string error_ ABSL_GUARDED_BY(mu_);
};

struct LagResult {
  Samples ack, lag_all, lag_one, floor;
  uint64_t failures = 0;
  uint64_t max_version = 0;
  std::string first_error;
};

// Part 2's prober: `probes` Updates of 10 examples to rotating replicas,
// each followed at once by Predict(min_model_version) to the two others.
LagResult Probe(const std::vector<std::unique_ptr<ClickdClient>>& clients, int probes,
                double seconds) {
  LagResult out;
  std::mt19937_64 rng(7);
  std::vector<v1::UpdateRequest> pool;
  for (int i = 0; i < 16; ++i) pool.push_back(MakeUpdate(rng, 10));
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  for (int p = 0; p < probes && Clock::now() < end; ++p) {
    const int a = p % kReplicas, b = (p + 1) % kReplicas, c = (p + 2) % kReplicas;
    v1::UpdateRequest& update = pool[p % pool.size()];
    update.set_idempotency_key(NextKey());
    const auto sent = Clock::now();
    auto acked = clients[a]->Update(update);
    const auto ack_at = Clock::now();
    if (!acked.ok()) {
      if (out.failures++ == 0) out.first_error = acked.status().ToString();
      continue;
    }
    const uint64_t v = acked->model_version();
    out.max_version = std::max(out.max_version, v);
    auto wait = std::make_shared<PairWait>();
    for (int k = 0; k < 2; ++k) {
      clients[k == 0 ? b : c]->PredictAsync(MakePredict(1, v),
                                            [wait, k](absl::StatusOr<v1::PredictResponse> r) {
                                              if (r.ok()) {
                                                wait->Done(k);
                                              } else {
                                                wait->Failed(k, r.status());
                                              }
                                            },
                                            {.timeout = absl::Seconds(20)});
    }
    Clock::time_point at_b, at_c;
    std::string error;
    if (!wait->Wait(&at_b, &at_c, &error)) {
      if (out.failures++ == 0) out.first_error = error;
      continue;
    }
    out.ack.Add(Micros(ack_at - sent));
    out.lag_all.Add(Micros(std::max(at_b, at_c) - ack_at));
    out.lag_one.Add(Micros(at_b - ack_at));
    out.lag_one.Add(Micros(at_c - ack_at));
    // The method's floor: the same Predict on a replica that has applied v.
    const auto f0 = Clock::now();
    if (clients[b]->Predict(MakePredict(1, v)).ok()) out.floor.Add(Micros(Clock::now() - f0));
    std::this_thread::sleep_for(std::chrono::milliseconds(absl::GetFlag(FLAGS_probe_interval_ms)));
  }
  return out;
}

std::string LagJson(const char* load, const LagResult& r, double background_updates_per_s) {
  return absl::StrFormat(
      R"({"load": "%s", "background_updates_per_s": %.1f, "failures": %d, "ack": %s, )"
      R"("lag_all_replicas": %s, "lag_one_replica": %s, "predict_floor": %s})",
      load, background_updates_per_s, r.failures, r.ack.Json(), r.lag_all.Json(), r.lag_one.Json(),
      r.floor.Json());
}

// Part 2: lag under light and heavy load.
std::vector<std::string> RunLag(const Fleet& fleet,
                                const std::vector<std::unique_ptr<ClickdClient>>& clients) {
  absl::PrintF(
      "\n## 2. Publish-to-applied lag (Update to A, then Predict min_model_version "
      "to B and C)\n");
  std::vector<std::string> json;
  const int probes = absl::GetFlag(FLAGS_lag_probes);
  const double seconds = absl::GetFlag(FLAGS_lag_seconds);
  for (bool heavy : {false, true}) {
    absl::PrintF("%s\n", LoadAverage().c_str());
    std::unique_ptr<Writers> background;
    if (heavy) {
      background =
          std::make_unique<Writers>(ReplicaAddresses(fleet), absl::GetFlag(FLAGS_heavy_writers),
                                    absl::GetFlag(FLAGS_heavy_batch), seconds + 5, 1000000);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    LagResult r = Probe(clients, probes, seconds);
    double rate = 0;
    uint64_t max_version = r.max_version;
    if (background != nullptr) {
      WriteResult w = background->Finish();
      rate = w.updates / w.seconds;
      max_version = std::max(max_version, w.max_version);
    }
    const char* load = heavy ? "heavy" : "light";
    absl::PrintF("  %s load (background %.0f updates/s of %d examples), %d failures%s\n", load,
                 rate, heavy ? absl::GetFlag(FLAGS_heavy_batch) : 0, r.failures,
                 r.first_error.empty() ? "" : (": " + r.first_error).c_str());
    absl::PrintF("    Update ack on A           %s\n", r.ack.Summary().c_str());
    absl::PrintF("    ack -> applied on B and C %s\n", r.lag_all.Summary().c_str());
    absl::PrintF("    ack -> applied on one     %s\n", r.lag_one.Summary().c_str());
    absl::PrintF("    floor (Predict RTT)       %s\n", r.floor.Summary().c_str());
    json.push_back(LagJson(load, r, rate));
    Drain(clients, max_version);
  }
  return json;
}

struct PredictResult {
  Samples latency;
  uint64_t errors = 0;
  uint64_t first_version = 0, last_version = 0;
  double seconds = 0;
};

PredictResult PredictLoop(const ClickdClient& client, double seconds) {
  PredictResult out;
  const v1::PredictRequest request = MakePredict(absl::GetFlag(FLAGS_candidates), 0);
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (int n = 0; n < absl::GetFlag(FLAGS_max_predicts) && Clock::now() < end; ++n) {
    const auto t0 = Clock::now();
    auto response = client.Predict(request);
    if (!response.ok()) {
      ++out.errors;
      continue;
    }
    out.latency.Add(Micros(Clock::now() - t0));
    if (out.first_version == 0) out.first_version = response->model_version();
    out.last_version = response->model_version();
  }
  out.seconds = Seconds(Clock::now() - start);
  return out;
}

// Part 3: Predict on replica C, idle vs applying the stream. A third case,
// the same Predict on the file log's clickd (which applies nothing) under
// the same writers, tells what the busy machine costs apart from applying.
std::vector<std::string> RunPredict(const Fleet& fleet,
                                    const std::vector<std::unique_ptr<ClickdClient>>& clients) {
  const int candidates = absl::GetFlag(FLAGS_candidates);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  absl::PrintF("\n## 3. Predict (1 context + %d candidates, one closed-loop caller) on replica C\n",
               candidates);
  std::vector<std::string> json;
  const std::vector<std::string> writers_to = {fleet.replicas[0]->address(),
                                               fleet.replicas[1]->address()};
  auto file_log = Connect(fleet.file_log->address());
  enum Case { kIdle, kApplying, kControl };
  const char* const kNames[] = {"idle", "applying", "control"};
  Samples all[3];
  for (int rep = 0; rep < absl::GetFlag(FLAGS_repeats); ++rep) {
    for (Case c : {kIdle, kApplying, kControl}) {
      absl::PrintF("%s\n", LoadAverage().c_str());
      std::unique_ptr<Writers> background;
      if (c != kIdle) {
        background =
            std::make_unique<Writers>(writers_to, absl::GetFlag(FLAGS_heavy_writers),
                                      absl::GetFlag(FLAGS_heavy_batch), seconds + 3, 1000000);
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
      PredictResult r = PredictLoop(c == kControl ? *file_log : *clients[2], seconds);
      double rate = 0;
      uint64_t max_version = 0;
      if (background != nullptr) {
        WriteResult w = background->Finish();
        rate = w.updates / w.seconds;
        max_version = w.max_version;
      }
      const uint64_t applied = c == kControl ? 0 : r.last_version - r.first_version;
      absl::PrintF(
          "  %-8s rep %d: %7.0f predicts/s  %s  errors %d; %s applied %d records meanwhile "
          "(writers on A, B: %.0f updates/s)\n",
          kNames[c], rep, r.latency.size() / r.seconds, r.latency.Summary().c_str(), r.errors,
          c == kControl ? "file-log clickd" : "C", applied, rate);
      json.push_back(absl::StrFormat(
          R"({"case": "%s", "target": "%s", "rep": %d, "predicts_per_s": %.1f, "errors": %d, )"
          R"("records_applied_meanwhile": %d, "background_updates_per_s": %.1f, "latency": %s})",
          kNames[c], c == kControl ? "file_log" : "replica_c", rep, r.latency.size() / r.seconds,
          r.errors, applied, rate, r.latency.Json()));
      all[c].Append(r.latency);
      if (max_version > 0) Drain(clients, max_version);
    }
  }
  for (Case c : {kApplying, kControl}) {
    absl::PrintF(
        "  => %s / idle: p50 %.2fx, p99 %.2fx\n", kNames[c],
        all[kIdle].Percentile(0.5) > 0 ? all[c].Percentile(0.5) / all[kIdle].Percentile(0.5) : 0,
        all[kIdle].Percentile(0.99) > 0 ? all[c].Percentile(0.99) / all[kIdle].Percentile(0.99)
                                        : 0);
  }
  return json;
}

int Main() {
  const std::string dir = absl::GetFlag(FLAGS_work_dir);
  if (dir.empty()) {
    std::fprintf(stderr, "--work_dir is required\n");
    return 2;
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  absl::PrintF(
      "# replication_bench: 3 nats-server nodes (R=3), 3 clickd replicas, 1 clickd "
      "with the file log (every_request), all on this machine\n%s\n",
      LoadAverage().c_str());
  Fleet fleet = StartFleet(dir);
  std::vector<std::string> throughput, lag, predict;
  {
    std::vector<std::unique_ptr<ClickdClient>> clients;
    for (const auto& r : fleet.replicas) clients.push_back(Connect(r->address()));
    // Warm up: the stream exists, every replica applies, the file log has
    // its first records.
    {
      Writers warm(ReplicaAddresses(fleet), 3, 10, 2, 100);
      Drain(clients, warm.Join().max_version);
      Writers warm_file({fleet.file_log->address()}, 1, 10, 2, 100);
      warm_file.Join();
    }
    throughput = RunThroughput(fleet, clients);
    if (!absl::GetFlag(FLAGS_throughput_only)) {
      lag = RunLag(fleet, clients);
      predict = RunPredict(fleet, clients);
    }
  }  // clients go before the servers stop (a graceful stop waits for them)
  for (auto& r : fleet.replicas) r->Stop();
  fleet.file_log->Stop();
  absl::PrintF("\n%s\n", LoadAverage().c_str());
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    std::ofstream file(out);
    file << "{\"throughput\": [\n  " << absl::StrJoin(throughput, ",\n  ") << "\n],\n\"lag\": [\n  "
         << absl::StrJoin(lag, ",\n  ") << "\n],\n\"predict\": [\n  "
         << absl::StrJoin(predict, ",\n  ") << "\n]}\n";
    absl::PrintF("results: %s\n", out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return clickd::Main();
}
