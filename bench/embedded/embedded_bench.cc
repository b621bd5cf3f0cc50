// embedded_bench: Predict in the caller's process (embedded/embedded_replica.h)
// beside the same Predict over gRPC to a clickd replica, in one run
// (docs/embedded.md has the figures; bench/embedded/run.sh runs it).
//
// It starts, on 127.0.0.1, a 3-node nats-server JetStream cluster
// (tests/nats_cluster.h) and one clickd replica (--replication=jetstream),
// teaches the default model --updates Updates of 100 click-like examples,
// opens an embedded replica in this process, and measures:
//   latency    Predict of 1 context + --candidates candidates, one caller,
//              closed loop: p50/p99 in-process, through the C ABI the
//              bindings load (serialized in and out), and over gRPC (one
//              channel); then each --then_run command (run.sh: the Go and
//              Python bindings' latency against this deployment);
//   throughput candidates/s of one thread calling the embedded replica in a
//              loop, against one closed-loop gRPC caller (whose server
//              uses the other core too: the ratio favours gRPC);
//   freshness  --fresh_writers threads (each with its own channel) offer
//              --fresh_rate Updates/s in all, of --fresh_examples examples,
//              to the replica for --fresh_seconds, open loop; for each
//              acknowledged one, the time from its acknowledgement (as its
//              writer's thread saw it: late when the writers wait for a
//              core, so 0 if the embedded replica had applied it by then)
//              and from its send (an upper bound: it includes the Update's
//              own latency) until the embedded replica had applied its
//              model_version.
// Every loop is bounded in count and time; every process is stopped by PID.
//
// Usage: embedded_bench --work_dir=DIR [--clickd=PATH] [--out=results.json]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/clickd_client.h"
#include "core/features/hasher.h"
#include "embedded/clickd_embedded.h"
#include "embedded/embedded_replica.h"
#include "tests/nats_cluster.h"
#include "tests/server_process.h"

ABSL_FLAG(std::string, work_dir, "", "directory for the NATS stores and clickd's data");
ABSL_FLAG(std::string, clickd, "", "the clickd binary (empty: the one this build made)");
ABSL_FLAG(std::string, out, "", "where to write the results as JSON (empty: nowhere)");
ABSL_FLAG(int, updates, 200, "Updates of 100 examples that train the model first");
ABSL_FLAG(int, candidates, 40, "candidates per Predict");
ABSL_FLAG(int, grpc_calls, 5000, "Predicts over gRPC in the latency phase");
ABSL_FLAG(int, embedded_calls, 50000, "Predicts in-process in the latency phase");
ABSL_FLAG(double, seconds, 3, "seconds of each throughput run");
ABSL_FLAG(int, fresh_rate, 10000, "Updates per second the freshness writers offer, in all");
ABSL_FLAG(double, fresh_seconds, 5, "seconds of the freshness phase");
ABSL_FLAG(int, fresh_writers, 512,
          "writer threads of the freshness phase, each with its own channel: the rate "
          "they can offer is at most writers / the Update's latency");
ABSL_FLAG(int, fresh_examples, 1, "examples per Update of the freshness phase");
ABSL_FLAG(std::vector<std::string>, then_run, {},
          "commands run after the latency phase, each with --nats_url=URLS --server=ADDRESS "
          "appended (run.sh: the Go and Python bindings' latency against this deployment)");

namespace clickd {
namespace {

using ::clickd::testing::NatsCluster;
using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;
using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Samples {
  std::vector<double> values;
  double Percentile(double q) const {
    if (values.empty()) return 0;
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
  }
  std::string Summary() const {
    return absl::StrFormat("p50 %.2f us, p99 %.2f us (n=%d)", Percentile(0.5), Percentile(0.99),
                           values.size());
  }
};

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return absl::StrCat("load ", a, " ", b, " ", c);
}

v1::UpdateRequest MakeUpdate(std::mt19937_64& rng, int examples) {
  v1::UpdateRequest request;
  request.set_model("default");
  for (int i = 0; i < examples; ++i) {
    const uint64_t user = rng() % 100000, ad = rng() % 1000, site = rng() % 100;
    v1::LabeledExample* e = request.add_examples();
    e->set_label(rng() % 20 == 0 ? 1.0f : 0.0f);
    for (auto [ns, name] : {std::pair<const char*, std::string>{"user", absl::StrCat("u", user)},
                            {"ad", absl::StrCat("a", ad)},
                            {"site", absl::StrCat("s", site)}}) {
      v1::Namespace* space = e->mutable_example()->add_namespaces();
      space->set_name(ns);
      space->add_features()->set_name(name);
    }
  }
  return request;
}

v1::PredictRequest MakePredict(std::mt19937_64& rng, int candidates) {
  v1::PredictRequest request;
  request.set_model("default");
  for (auto [ns, name] :
       {std::pair<const char*, std::string>{"user", absl::StrCat("u", rng() % 100000)},
        {"site", absl::StrCat("s", rng() % 100)}}) {
    v1::Namespace* space = request.mutable_context()->add_namespaces();
    space->set_name(ns);
    space->add_features()->set_name(name);
  }
  for (int c = 0; c < candidates; ++c) {
    v1::Namespace* space = request.add_candidates()->add_namespaces();
    space->set_name("ad");
    space->add_features()->set_name(absl::StrCat("a", rng() % 1000));
  }
  return request;
}

int Run() {
  const std::string dir = absl::GetFlag(FLAGS_work_dir);
  if (dir.empty()) {
    std::fprintf(stderr, "embedded_bench: --work_dir is required\n");
    return 2;
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  absl::PrintF("# embedded_bench: 3 nats-server nodes, 1 clickd replica, this process; %s\n",
               LoadAverage());
  auto nats = NatsCluster::Start(dir + "/nats", 3);
  if (!nats.ok()) {
    std::fprintf(stderr, "NATS did not start: %s\n", nats.status().ToString().c_str());
    return 1;
  }
  ServerOptions server_options;
  server_options.binary = absl::GetFlag(FLAGS_clickd);
  server_options.flags = {"--replication=jetstream",   "--nats_url=" + (*nats)->Urls(),
                          "--nats_replicas=3",         "--replica_id=r0",
                          "--data_dir=" + dir + "/r0", "--snapshot_interval=1h",
                          "--shutdown_grace_seconds=2"};
  server_options.ready_timeout = std::chrono::seconds(90);
  auto server = ServerProcess::Start(server_options);
  if (!server.ok()) {
    std::fprintf(stderr, "clickd did not start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto client = ClickdClient::Create((*server)->address(), {.timeout = absl::Seconds(10)});
  if (!client.ok()) return 1;
  std::mt19937_64 rng(1);
  uint64_t version = 0;
  for (int i = 0; i < absl::GetFlag(FLAGS_updates); ++i) {
    auto learned = (*client)->Update(MakeUpdate(rng, 100));
    if (learned.ok()) version = std::max(version, learned->model_version());
  }
  auto embedded = EmbeddedReplica::Open({.nats_url = (*nats)->Urls()});
  if (!embedded.ok()) {
    std::fprintf(stderr, "embedded replica: %s\n", embedded.status().ToString().c_str());
    return 1;
  }
  if (!(*embedded)->WaitForVersion(version, std::chrono::seconds(60)).ok()) return 1;
  absl::PrintF("trained: model_version %d, %d models in the embedded replica\n", version,
               (*embedded)->stats().models);

  // Latency.
  const int candidates = absl::GetFlag(FLAGS_candidates);
  std::vector<v1::PredictRequest> pool;
  for (int i = 0; i < 64; ++i) pool.push_back(MakePredict(rng, candidates));
  Samples grpc_latency, embedded_latency;
  for (int i = 0; i < absl::GetFlag(FLAGS_grpc_calls); ++i) {
    const auto start = Clock::now();
    auto response = (*client)->Predict(pool[i % pool.size()]);
    if (response.ok()) grpc_latency.values.push_back(MicrosSince(start));
  }
  v1::PredictResponse response;
  for (int i = 0; i < absl::GetFlag(FLAGS_embedded_calls); ++i) {
    response.Clear();
    const auto start = Clock::now();
    absl::Status s = (*embedded)->Predict(pool[i % pool.size()], &response);
    if (s.ok()) embedded_latency.values.push_back(MicrosSince(start));
  }
  absl::PrintF("latency 1x%d: gRPC %s; embedded %s; p50 ratio %.1fx  (%s)\n", candidates,
               grpc_latency.Summary(), embedded_latency.Summary(),
               grpc_latency.Percentile(0.5) / std::max(1e-9, embedded_latency.Percentile(0.5)),
               LoadAverage());
  // The C ABI the bindings load: the same requests serialized, each answer
  // serialized and freed, on a handle of its own.
  Samples c_abi_latency;
  Samples keys_latency;
  {
    clickd_embedded* handle = nullptr;
    if (clickd_embedded_open((*nats)->Urls().c_str(), "CLICKD", nullptr, 60'000, &handle,
                             nullptr) != 0 ||
        clickd_embedded_wait_for_version(handle, version, 60'000, nullptr) != 0) {
      std::fprintf(stderr, "embedded_bench: the C ABI's replica did not open\n");
      return 1;
    }
    std::vector<std::string> serialized;
    for (const v1::PredictRequest& r : pool) serialized.push_back(r.SerializeAsString());
    for (int i = 0; i < absl::GetFlag(FLAGS_embedded_calls); ++i) {
      const std::string& bytes = serialized[i % serialized.size()];
      void* out = nullptr;
      size_t out_len = 0;
      const auto start = Clock::now();
      const int code =
          clickd_embedded_predict(handle, bytes.data(), bytes.size(), &out, &out_len, nullptr);
      clickd_embedded_free(out);
      if (code == 0) c_abi_latency.values.push_back(MicrosSince(start));
    }
    // The same requests as flat arrays of client-hashed keys
    // (clickd_embedded_predict_keys: no protobuf on the caller's side).
    // The default model hashes with seed 0.
    const FeatureHasher hasher{HashingConfig{}};
    struct Flat {
      std::vector<std::string> names;
      std::vector<const char*> name_ptrs;
      std::vector<uint64_t> context_keys, candidate_keys;
      std::vector<uint32_t> context_ns, candidate_ns;
      std::vector<size_t> ends;
    };
    std::vector<Flat> flat(pool.size());
    for (size_t r = 0; r < pool.size(); ++r) {
      Flat& f = flat[r];
      auto add = [&](const v1::Example& e, std::vector<uint64_t>* keys,
                     std::vector<uint32_t>* spaces) {
        for (const v1::Namespace& ns : e.namespaces()) {
          auto at = std::find(f.names.begin(), f.names.end(), ns.name());
          if (at == f.names.end()) at = f.names.insert(f.names.end(), ns.name());
          for (const v1::Feature& feature : ns.features()) {
            keys->push_back(
                FeatureHasher::NamedKey(hasher.NamespaceHash(ns.name()), feature.name()));
            spaces->push_back(static_cast<uint32_t>(at - f.names.begin()));
          }
        }
      };
      add(pool[r].context(), &f.context_keys, &f.context_ns);
      for (const v1::Example& c : pool[r].candidates()) {
        add(c, &f.candidate_keys, &f.candidate_ns);
        f.ends.push_back(f.candidate_keys.size());
      }
      for (const std::string& n : f.names) f.name_ptrs.push_back(n.c_str());
    }
    std::vector<double> predictions(static_cast<size_t>(candidates));
    for (int i = 0; i < absl::GetFlag(FLAGS_embedded_calls); ++i) {
      const Flat& f = flat[i % flat.size()];
      const auto start = Clock::now();
      const int code = clickd_embedded_predict_keys(
          handle, "default", nullptr, f.name_ptrs.data(), f.name_ptrs.size(), f.context_keys.data(),
          f.context_ns.data(), nullptr, f.context_keys.size(), f.candidate_keys.data(),
          f.candidate_ns.data(), nullptr, f.ends.data(), f.ends.size(), predictions.data(), nullptr,
          nullptr, nullptr);
      if (code == 0) keys_latency.values.push_back(MicrosSince(start));
    }
    clickd_embedded_close(handle);
  }
  absl::PrintF("latency 1x%d through the C ABI (serialized in and out): %s  (%s)\n", candidates,
               c_abi_latency.Summary(), LoadAverage());
  absl::PrintF(
      "latency 1x%d through the C ABI's predict_keys (flat keys in, predictions out): "
      "%s  (%s)\n",
      candidates, keys_latency.Summary(), LoadAverage());
  for (const std::string& command : absl::GetFlag(FLAGS_then_run)) {
    std::fflush(stdout);
    const int status = std::system(
        absl::StrCat(command, " --nats_url=", (*nats)->Urls(), " --server=", (*server)->address())
            .c_str());
    if (status != 0) {
      std::fprintf(stderr, "embedded_bench: %s failed (status %d)\n", command.c_str(), status);
      return 1;
    }
  }

  // Throughput on one calling thread.
  const double seconds = absl::GetFlag(FLAGS_seconds);
  auto candidates_per_second = [&](auto call) {
    const auto start = Clock::now();
    uint64_t scored = 0;
    for (int i = 0; i < 10'000'000 && MicrosSince(start) < seconds * 1e6; ++i) {
      if (call(pool[i % pool.size()])) scored += candidates;
    }
    return scored / (MicrosSince(start) / 1e6);
  };
  const double over_grpc = candidates_per_second(
      [&](const v1::PredictRequest& r) { return (*client)->Predict(r).ok(); });
  const double in_process = candidates_per_second([&](const v1::PredictRequest& r) {
    response.Clear();
    return (*embedded)->Predict(r, &response).ok();
  });
  absl::PrintF("throughput, one caller: gRPC %.0f candidates/s; embedded %.0f; ratio %.1fx  (%s)\n",
               over_grpc, in_process, in_process / std::max(1.0, over_grpc), LoadAverage());

  // Freshness under an open-loop writer.
  const int rate = absl::GetFlag(FLAGS_fresh_rate);
  const double fresh_seconds = absl::GetFlag(FLAGS_fresh_seconds);
  std::mutex mu;
  std::map<uint64_t, Clock::time_point> acked;    // version -> acknowledged at
  std::map<uint64_t, Clock::time_point> sent;     // version -> its Update sent at
  std::map<uint64_t, Clock::time_point> reached;  // version -> first seen applied
  std::atomic<bool> writing{true};
  std::thread poller([&] {
    uint64_t last = 0;
    // Bounded by the writers' phase (plus the final wait below).
    for (bool more = true; more;) {
      more = writing.load();
      const uint64_t now = (*embedded)->applied_version();
      if (now != last) {
        std::lock_guard<std::mutex> lock(mu);
        reached.emplace(now, Clock::now());
        last = now;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::thread> writers;
  std::atomic<uint64_t> errors{0};
  const int kWriters = std::max(1, absl::GetFlag(FLAGS_fresh_writers));
  const int fresh_examples = std::max(1, absl::GetFlag(FLAGS_fresh_examples));
  const auto start = Clock::now();
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937_64 wrng(100 + w);
      auto writer = ClickdClient::Create((*server)->address(), {.timeout = absl::Seconds(10)});
      if (!writer.ok()) return;
      const auto period = std::chrono::duration<double>(kWriters / static_cast<double>(rate));
      for (int i = 0;; ++i) {
        const auto due = start + std::chrono::duration_cast<Clock::duration>(period * i);
        if (MicrosSince(start) >= fresh_seconds * 1e6) break;
        std::this_thread::sleep_until(due);
        const v1::UpdateRequest update = MakeUpdate(wrng, fresh_examples);
        const auto sent_at = Clock::now();
        auto learned = (*writer)->Update(update);
        if (!learned.ok()) {
          errors.fetch_add(1);
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acked.emplace(learned->model_version(), Clock::now());
        sent.emplace(learned->model_version(), sent_at);
        version = std::max(version, learned->model_version());
      }
    });
  }
  for (std::thread& t : writers) t.join();
  const double elapsed = MicrosSince(start) / 1e6;
  (*embedded)->WaitForVersion(version, std::chrono::seconds(30)).IgnoreError();
  writing.store(false);
  poller.join();
  // From the acknowledgement as the writer's thread saw it (late when
  // writers wait for a core), and from the send (an upper bound: it holds
  // the Update's own latency).
  Samples freshness, from_send;
  for (const auto& [v, at] : acked) {
    auto it = reached.lower_bound(v);  // the first applied sequence >= v
    if (it == reached.end()) continue;
    freshness.values.push_back(
        std::max(0.0, std::chrono::duration<double, std::micro>(it->second - at).count()));
    from_send.values.push_back(
        std::max(0.0, std::chrono::duration<double, std::micro>(it->second - sent[v]).count()));
  }
  absl::PrintF(
      "freshness at %.0f Updates/s of %d examples from %d writers (%d errors): acknowledged -> "
      "applied in the embedded replica %s; sent -> applied %s  (%s)\n",
      acked.size() / elapsed, fresh_examples, kWriters, errors.load(), freshness.Summary(),
      from_send.Summary(), LoadAverage());
  const auto stats = (*embedded)->stats();
  absl::PrintF("embedded replica: applied %d, bootstraps %d\n", stats.applied_version,
               stats.bootstraps);

  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    std::ofstream file(out);
    file << absl::StrFormat(
        R"({"candidates": %d, "grpc_p50_us": %.2f, "grpc_p99_us": %.2f, "embedded_p50_us": %.3f, )"
        R"("embedded_p99_us": %.3f, "c_abi_p50_us": %.3f, "c_abi_p99_us": %.3f, "grpc_candidates_per_s": %.0f, "embedded_candidates_per_s": %.0f, )"
        R"("fresh_updates_per_s": %.0f, "fresh_p50_us": %.0f, "fresh_p99_us": %.0f, )"
        R"("fresh_from_send_p50_us": %.0f, "fresh_from_send_p99_us": %.0f})"
        "\n",
        candidates, grpc_latency.Percentile(0.5), grpc_latency.Percentile(0.99),
        embedded_latency.Percentile(0.5), embedded_latency.Percentile(0.99),
        c_abi_latency.Percentile(0.5), c_abi_latency.Percentile(0.99), over_grpc, in_process,
        acked.size() / elapsed, freshness.Percentile(0.5), freshness.Percentile(0.99),
        from_send.Percentile(0.5), from_send.Percentile(0.99));
  }
  embedded->reset();
  (void)(*server)->Stop();
  return 0;
}

}  // namespace
}  // namespace clickd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return clickd::Run();
}
