// The service layer under concurrent calls, in process and without gRPC's
// transport: the real ModelRegistry (durable in a temporary data directory,
// and memory-only), Executor, Snapshotter, LocalModelWriter, ClickdService
// and metrics, driven from many threads at once through the service's work
// entry points (RunCallWork, ApplyUpdate, ScorePredictRequest), the
// snapshotter, the writer's creates and deletes, and GetModel-style reads.
//
// This is what checks the service layer for races under TSan: Debian's gRPC
// is not TSan-instrumented, so the tests that talk to a real clickd over
// gRPC (tests/) do not run in that build. Each test checks results, not only
// the absence of reports: exact counts after concurrent updates, snapshots
// that hold exactly a prefix of the update log, a restore that equals the
// model that learned the acknowledged batches in log order, and the codes a
// deleted model's calls get. Every loop is bounded in count and every wait
// in time.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/model/state_digest.h"
#include "core/persist/batch_codec.h"
#include "core/persist/file_update_log.h"
#include "core/persist/snapshot.h"
#include "gtest/gtest.h"
#include "server/executor.h"
#include "server/metrics/clickd_metrics.h"
#include "server/metrics/durability_metrics.h"
#include "server/metrics/registry.h"
#include "server/metrics/rpc_metrics.h"
#include "server/model_writer.h"
#include "server/service.h"
#include "server/snapshotter.h"

namespace clickd {
namespace {

using Clock = std::chrono::steady_clock;

// How long any wait may take: generous, since TSan slows everything down.
Clock::time_point Deadline() { return Clock::now() + std::chrono::seconds(120); }

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A fresh directory for one registry's models.
std::string FreshDataDir(const std::string& label) {
  static std::atomic<int> n{0};
  const std::string dir = absl::StrCat(::testing::TempDir(), "/service_concurrency_", label, "_",
                                       getpid(), "_", n.fetch_add(1));
  std::filesystem::remove_all(dir);  // PIDs repeat across runs
  return dir;
}

// Removes a directory tree when it goes out of scope.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::string dir) : dir_(std::move(dir)) {}
  ~RemoveOnExit() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

 private:
  const std::string dir_;
};

// The default model config under another name.
ModelConfig Named(const std::string& name) {
  ModelConfig config;
  config.name = name;
  return config;
}

v1::Example Ad(const std::string& name) {
  v1::Example e;
  auto* ns = e.add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_name(name);
  return e;
}

// One impression of `candidates` ads on `model`, labelled alternately. Its
// context carries `tag` (namespace "req"), so that an update-log record
// names the request it came from (TagOf).
v1::UpdateRequest Impression(const std::string& model, uint64_t tag, int candidates) {
  v1::UpdateRequest r;
  r.set_model(model);
  r.set_request_id(absl::StrCat("req-", tag));
  auto* imp = r.add_impressions();
  auto* req = imp->mutable_context()->add_namespaces();
  req->set_name("req");
  req->add_features()->set_id(tag);
  auto* user = imp->mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_features()->set_id(tag % 7);
  for (int i = 0; i < candidates; ++i) {
    auto* c = imp->add_candidates();
    *c->mutable_example() = Ad(absl::StrCat("ad", (tag + i) % 5));
    c->set_label((tag + i) % 3 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

v1::PredictRequest TwoAds(const std::string& model) {
  v1::PredictRequest r;
  r.set_model(model);
  auto* user = r.mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_features()->set_id(3);
  *r.add_candidates() = Ad("ad1");
  *r.add_candidates() = Ad("ad2");
  return r;
}

// The tag of the request an update-log record came from (Impression).
absl::StatusOr<uint64_t> TagOf(std::string_view record) {
  auto decoded = DecodeBatch(record);
  if (!decoded.ok()) return decoded.status();
  if (decoded->batch.empty() || decoded->batch[0].context == nullptr) {
    return absl::InternalError("record without a context");
  }
  for (const Namespace& ns : decoded->batch[0].context->namespaces) {
    if (ns.name == "req" && !ns.features.empty()) return ns.features[0].id;
  }
  return absl::InternalError("record without a tag");
}

// The methods of clickd.v1.Clickd, as the server gives them to RpcMetrics.
std::vector<std::string> ClickdMethods() {
  return {"Predict",       "Update",   "UpdateStream",  "UpdateStreamAcked",
          "CreateModel",   "GetModel", "ListModels",    "DeleteModel",
          "SnapshotModel", "Feedback", "FeedbackStream"};
}

// clickd_requests_total{method,code}, or -1 if the series is absent.
double RequestCount(const metrics::Registry& registry, const std::string& method,
                    absl::StatusCode code) {
  const metrics::Labels labels = {{"code", absl::StatusCodeToString(code)}, {"method", method}};
  for (const metrics::MetricFamily& f : registry.Collect()) {
    if (f.name != "clickd_requests_total") continue;
    for (const metrics::ClientMetric& m : f.metric) {
      if (metrics::LabelsOf(m) == labels) return m.counter.value;
    }
  }
  return -1;
}

// Collects statuses nobody expected, for the failure message.
class Unexpected {
 public:
  void Add(std::string_view what, const absl::Status& status) {
    MutexLock lock(&mu_);
    if (seen_.size() < 10)
      seen_.push_back(absl::StrCat(std::string(what), ": ", status.ToString()));
    ++count_;
  }
  int count() const {
    MutexLock lock(&mu_);
    return count_;
  }
  std::string Describe() const {
    MutexLock lock(&mu_);
    std::string out;
    for (const std::string& s : seen_) absl::StrAppend(&out, s, "\n");
    return out;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> seen_ ABSL_GUARDED_BY(mu_);
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Counts down to zero; Wait returns whether it got there before `deadline`.
class Countdown {
 public:
  explicit Countdown(int n) : left_(n) {}
  void Done() {
    MutexLock lock(&mu_);
    --left_;
    cv_.SignalAll();
  }
  bool Wait(Clock::time_point deadline) {
    MutexLock lock(&mu_);
    while (left_ > 0) {
      const auto now = Clock::now();
      if (now >= deadline) return false;
      cv_.WaitFor(&mu_, deadline - now);
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int left_ ABSL_GUARDED_BY(mu_);
};

void JoinAll(std::vector<std::thread>& threads) {
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  threads.clear();
}

// What a Predict must answer: probabilities strictly inside (0, 1).
bool ValidPredictions(const v1::PredictResponse& response, int candidates) {
  if (response.predictions_size() != candidates) return false;
  for (const v1::Prediction& p : response.predictions()) {
    if (!(p.prediction() > 0 && p.prediction() < 1)) return false;
  }
  return true;
}

// --- Learning and scoring through the executor, counted exactly -----------

// The registry, its metrics and the service's collaborators as main() wires
// them, over a durable or a memory-only registry.
struct Server {
  explicit Server(DurabilityOptions durability, ExecutorOptions isolation,
                  std::chrono::milliseconds snapshot_interval)
      : durability_metrics(&metrics_registry),
        registry(WithMetrics(std::move(durability))),
        rpc_metrics(&metrics_registry, ClickdMethods()),
        snapshotter(std::in_place, &registry, snapshot_interval),
        executor(isolation),
        writer(&registry),
        service({.registry = &registry,
                 .on_models_changed = [this] { ModelsChanged(); },
                 .rpc_metrics = &rpc_metrics,
                 .snapshotter = &*snapshotter,
                 .executor = &executor,
                 .writer = &writer}) {
    metrics::RegisterModelMetrics(&metrics_registry, &registry);
    metrics::DurabilityMetrics::RegisterModelFamilies(&metrics_registry, &registry);
  }

  // Wires the durability metrics in as main() does, and counts snapshots.
  DurabilityOptions WithMetrics(DurabilityOptions durability) {
    durability.sync_observer = [this](const std::string& model) {
      return durability_metrics.SyncObserver(model);
    };
    durability.on_snapshot = [this](const ServedModel& model,
                                    const absl::StatusOr<SnapshotReport>& result) {
      snapshots_observed.fetch_add(1);
      if (result.ok()) durability_metrics.ObserveSnapshot(model.name(), result->seconds);
    };
    return durability;
  }

  // What the service's on_models_changed does in main(), minus health.
  void ModelsChanged() {
    models_changed.fetch_add(1);
    durability_metrics.RemoveDeletedModels(registry);
  }

  std::atomic<int> snapshots_observed{0};
  std::atomic<int> models_changed{0};
  metrics::Registry metrics_registry;
  metrics::DurabilityMetrics durability_metrics;
  ModelRegistry registry;
  metrics::RpcMetrics rpc_metrics;
  // Tests reset it to stop snapshots from some point on; the service only
  // uses it in SnapshotModel, which needs gRPC and is not called here.
  std::optional<Snapshotter> snapshotter;
  Executor executor;
  LocalModelWriter writer;
  ClickdService service;
};

DurabilityOptions Durable(const std::string& label, SyncMode sync) {
  DurabilityOptions durability;
  durability.data_dir = FreshDataDir(label);
  durability.journal.log.sync = sync;
  return durability;
}

// Each test runs over a durable registry (in a temporary data directory,
// removed afterwards) and over a memory-only one.
class ServiceConcurrency : public ::testing::TestWithParam<bool> {
 protected:
  bool durable() const { return GetParam(); }
  DurabilityOptions Options(const std::string& label) {
    if (!durable()) return DurabilityOptions{};
    DurabilityOptions durability = Durable(label, SyncMode::kEveryRequest);
    remove_.emplace_back(std::make_unique<RemoveOnExit>(durability.data_dir));
    return durability;
  }

 private:
  std::vector<std::unique_ptr<RemoveOnExit>> remove_;
};

INSTANTIATE_TEST_SUITE_P(Registry, ServiceConcurrency, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Durable" : "MemoryOnly";
                         });

// Updates and Predicts from many threads, on the executor (two learners of
// one model at once) and inline, while readers take GetModel's statistics,
// state digests and metrics scrapes, and the snapshotter snapshots every
// few milliseconds: every update is learned exactly once, every example
// counted once in the progressive metrics, every call once in the metrics.
TEST_P(ServiceConcurrency, UpdatesAndPredictsCountExactly) {
  Server server(Options("count"), {.threads = 4, .max_queued = 4096, .max_running_per_key = 2},
                std::chrono::milliseconds(2));
  ClickdService& service = server.service;
  ASSERT_TRUE(server.writer.Create(ModelConfig{}).ok());
  auto served = *service.Lookup("default", "model");

  constexpr int kSubmitters = 4, kUpdatesEach = 60, kCandidates = 3;
  constexpr int kQueuedPredictsEach = 30, kInlinePredictors = 2, kInlinePredictsEach = 100;
  constexpr int kDigests = 10;
  constexpr uint64_t kExamples = uint64_t{kSubmitters} * kUpdatesEach * kCandidates;
  Unexpected unexpected;
  std::atomic<uint64_t> max_version{0};
  std::atomic<int> digests{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;

  auto refuse = [&](const absl::Status& s) { unexpected.Add("refused", s); };
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kUpdatesEach; ++i) {
        const uint64_t tag = uint64_t(t) * kUpdatesEach + i;
        service.RunCallWork(
            "default",
            [&, tag] {
              const auto start = Clock::now();
              v1::UpdateResponse response;
              std::vector<ScoredExample> scored;
              absl::Status s = service.Lookup("default", "model").status();
              if (s.ok()) {
                s = service.ApplyUpdate(*served, Impression("default", tag, kCandidates), &response,
                                        &scored);
              }
              service.RecordRequest("Update", s.code(), SecondsSince(start));
              if (!s.ok() || response.applied() != kCandidates || scored.size() != kCandidates ||
                  response.request_id() != absl::StrCat("req-", tag)) {
                unexpected.Add("Update", s);
                return;
              }
              uint64_t seen = max_version.load();
              while (seen < response.model_version() &&
                     !max_version.compare_exchange_weak(seen, response.model_version())) {
              }
            },
            refuse);
        if (i < kQueuedPredictsEach) {
          service.RunCallWork(
              /*key=*/"",
              [&] {
                const auto start = Clock::now();
                v1::PredictResponse response;
                absl::Status s = service.ScorePredictRequest(TwoAds("default"), &response);
                service.RecordRequest("Predict", s.code(), SecondsSince(start));
                if (!s.ok() || !ValidPredictions(response, 2)) unexpected.Add("Predict", s);
              },
              refuse);
        }
      }
    });
  }
  for (int t = 0; t < kInlinePredictors; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kInlinePredictsEach; ++i) {
        v1::PredictResponse response;
        absl::Status s = service.ScorePredictRequest(TwoAds("default"), &response);
        if (!s.ok() || !ValidPredictions(response, 2) || response.model_version() > kExamples) {
          unexpected.Add("inline Predict", s);
        }
      }
    });
  }
  // GetModel with state_digest: under the model's key, as
  // server/get_model_digest.cc runs it.
  threads.emplace_back([&] {
    for (int i = 0; i < kDigests; ++i) {
      service.RunCallWork(
          "default",
          [&] {
            if (StateDigest(served->model()).size() == 16) digests.fetch_add(1);
          },
          refuse);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  // GetModel and ListModels without a digest, and metrics scrapes: they
  // never wait for a learner, and what they see only grows.
  threads.emplace_back([&] {
    uint64_t last_updates = 0, last_examples = 0;
    for (int i = 0; i < 100000 && !done.load(); ++i) {
      const ModelStats stats = served->CachedStats();
      const MetricsSummary summary = served->ProgressiveSummary();
      if (stats.updates < last_updates || summary.examples < last_examples ||
          stats.updates > kExamples) {
        unexpected.Add("GetModel",
                       absl::InternalError(absl::StrCat(
                           "statistics went back: updates ", stats.updates, " after ", last_updates,
                           ", examples ", summary.examples, " after ", last_examples)));
      }
      last_updates = stats.updates;
      last_examples = summary.examples;
      (void)served->RecentProgressiveSummary();
      (void)served->snapshot_stats();
      (void)service.ModelVersion(*served);
      (void)server.registry.List();
      if (i % 16 == 0) (void)server.metrics_registry.Collect();
    }
  });

  for (int t = 0; t < kSubmitters + kInlinePredictors + 1; ++t) threads[t].join();
  ASSERT_TRUE(server.executor.WaitIdle(Deadline()));
  done.store(true);
  threads.back().join();
  threads.clear();

  EXPECT_EQ(unexpected.count(), 0) << unexpected.Describe();
  EXPECT_EQ(served->model().Updates(), kExamples);
  EXPECT_EQ(served->update_examples(), kExamples);
  EXPECT_EQ(served->ProgressiveSummary().examples, kExamples);
  EXPECT_EQ(served->CachedStats().updates, kExamples);
  EXPECT_EQ(max_version.load(), kExamples);  // the last learner to finish sees them all
  EXPECT_EQ(service.ModelVersion(*served), kExamples);
  constexpr int kPredicts =
      kSubmitters * kQueuedPredictsEach + kInlinePredictors * kInlinePredictsEach;
  EXPECT_EQ(served->predictions(), uint64_t{2} * kPredicts);
  EXPECT_EQ(digests.load(), kDigests);
  EXPECT_EQ(RequestCount(server.metrics_registry, "Update", absl::StatusCode::kOk),
            kSubmitters * kUpdatesEach);
  EXPECT_EQ(RequestCount(server.metrics_registry, "Predict", absl::StatusCode::kOk),
            kSubmitters * kQueuedPredictsEach);
  if (durable()) {
    // One log record per acknowledged update.
    EXPECT_EQ(served->journal()->log_sequence(), uint64_t{kSubmitters} * kUpdatesEach);
    server.snapshotter.reset();  // no snapshot after the count below
    const SnapshotStats stats = served->snapshot_stats();
    EXPECT_EQ(stats.failures, 0u);
    EXPECT_EQ(server.snapshots_observed.load(), static_cast<int>(stats.successes));
  }
}

// --- Create and delete while others learn and predict ---------------------

// Models are created and deleted through the writer while other threads
// learn on them (on the executor, under the model's key), predict on them,
// snapshot them, read their statistics and scrape the metrics. A call on a
// model that is gone fails cleanly: NOT_FOUND by name; FAILED_PRECONDITION
// for a durable model's learn or snapshot already holding the deleted one.
// A model nobody deletes learns every update exactly once meanwhile, and
// the data directory ends up holding exactly the models the registry holds.
TEST_P(ServiceConcurrency, ModelChurnFailsCleanly) {
  Server server(Options("churn"), {.threads = 3, .max_queued = 4096, .max_running_per_key = 1},
                std::chrono::milliseconds(1));
  ClickdService& service = server.service;
  ASSERT_TRUE(server.writer.Create(Named("stable")).ok());

  constexpr int kChurnRounds = 40, kLearners = 2, kUpdatesEach = 80, kPredictors = 2,
                kPredictsEach = 150;
  const std::vector<std::string> names = {"churn0", "churn1", "churn2", "stable"};
  Unexpected unexpected;
  std::atomic<int> stable_updates{0}, learned_on_churn{0}, gone{0}, creates{0}, deletes{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;

  // A learn outcome: OK, or the clean failures of a model that is gone.
  auto learn_outcome = [&](const std::string& name, const absl::Status& s) {
    if (s.ok()) {
      (name == "stable" ? stable_updates : learned_on_churn).fetch_add(1);
    } else if (name != "stable" && (s.code() == absl::StatusCode::kNotFound ||
                                    s.code() == absl::StatusCode::kFailedPrecondition)) {
      gone.fetch_add(1);
    } else {
      unexpected.Add(absl::StrCat("Update ", name), s);
    }
  };
  threads.emplace_back([&] {
    for (int i = 0; i < kChurnRounds; ++i) {
      ModelConfig config;
      config.name = absl::StrCat("churn", i % 3);
      config.num_shards = 4;
      auto created = server.writer.Create(config);
      if (created.ok()) {
        creates.fetch_add(1);
        server.ModelsChanged();
      } else if (created.status().code() != absl::StatusCode::kAlreadyExists) {
        unexpected.Add("Create", created.status());
      }
      absl::Status deleted = server.writer.Delete(absl::StrCat("churn", (i + 1) % 3));
      if (deleted.ok()) {
        deletes.fetch_add(1);
        server.ModelsChanged();
      } else if (deleted.code() != absl::StatusCode::kNotFound) {
        unexpected.Add("Delete", deleted);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  for (int t = 0; t < kLearners; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kUpdatesEach; ++i) {
        const std::string name = names[(t + i) % names.size()];
        const uint64_t tag = uint64_t(t) * kUpdatesEach + i;
        service.RunCallWork(
            name,
            [&, name, tag] {
              v1::UpdateResponse response;
              std::vector<ScoredExample> scored;
              auto served = service.Lookup(name, "model");
              absl::Status s = served.status();
              if (s.ok())
                s = service.ApplyUpdate(**served, Impression(name, tag, 2), &response, &scored);
              learn_outcome(name, s);
            },
            [&](const absl::Status& s) { unexpected.Add("refused", s); });
      }
    });
  }
  // Learners that hold a model across its delete, as an in-flight call does.
  threads.emplace_back([&] {
    for (int i = 0; i < kUpdatesEach; ++i) {
      const std::string name = names[i % 3];
      auto served = service.Lookup(name, "model");
      if (!served.ok()) {
        learn_outcome(name, served.status());
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      v1::UpdateResponse response;
      std::vector<ScoredExample> scored;
      absl::Status s = service.ApplyUpdate(**served, Impression(name, i, 2), &response, &scored);
      learn_outcome(name, s);
      absl::StatusOr<SnapshotReport> snap = (*served)->Snapshot();
      if (!snap.ok() && snap.status().code() != absl::StatusCode::kFailedPrecondition) {
        unexpected.Add("Snapshot", snap.status());
      }
    }
  });
  for (int t = 0; t < kPredictors; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPredictsEach; ++i) {
        const std::string& name = names[(t + i) % names.size()];
        v1::PredictResponse response;
        absl::Status s = service.ScorePredictRequest(TwoAds(name), &response);
        if (s.ok() ? !ValidPredictions(response, 2)
                   : name == "stable" || s.code() != absl::StatusCode::kNotFound) {
          unexpected.Add(absl::StrCat("Predict ", name), s);
        }
      }
    });
  }
  // ListModels, GetModel, on-demand snapshots and scrapes.
  threads.emplace_back([&] {
    int async_snapshots = 0;
    for (int i = 0; i < 100000 && !done.load(); ++i) {
      for (const auto& served : server.registry.List()) {
        (void)served->CachedStats();
        (void)served->ProgressiveSummary();
        (void)served->snapshot_stats();
        (void)service.ModelVersion(*served);
        if (i % 8 == 0 && served->durable() && async_snapshots++ < 200) {
          server.snapshotter->SnapshotAsync(served, [&](absl::StatusOr<SnapshotReport> r) {
            if (!r.ok() && r.status().code() != absl::StatusCode::kFailedPrecondition &&
                r.status().code() != absl::StatusCode::kCancelled) {
              unexpected.Add("SnapshotAsync", r.status());
            }
          });
        }
      }
      if (i % 4 == 0) (void)server.metrics_registry.Collect();
      // Deleted models do not count as failures of the shutdown pass.
      if (i % 16 == 0 && server.snapshotter->SnapshotChanged() != 0) {
        unexpected.Add("SnapshotChanged", absl::InternalError("a snapshot failed"));
      }
    }
  });

  for (size_t t = 0; t + 1 < threads.size(); ++t) threads[t].join();
  ASSERT_TRUE(server.executor.WaitIdle(Deadline()));
  done.store(true);
  threads.back().join();
  threads.clear();
  server.snapshotter.reset();  // runs or cancels the queued snapshots

  EXPECT_EQ(unexpected.count(), 0) << unexpected.Describe();
  EXPECT_GT(creates.load(), 0);
  EXPECT_GT(deletes.load(), 0);
  EXPECT_EQ(server.models_changed.load(), creates.load() + deletes.load());
  const int stable_sent = (kLearners * kUpdatesEach) / static_cast<int>(names.size());
  EXPECT_EQ(stable_updates.load(), stable_sent);
  EXPECT_EQ(server.registry.Get("stable")->model().Updates(), uint64_t{2} * stable_sent);
  EXPECT_EQ(server.registry.Get("stable")->ProgressiveSummary().examples,
            uint64_t{2} * stable_sent);
  if (durable()) {
    std::set<std::string> on_disk, held;
    for (const auto& entry :
         std::filesystem::directory_iterator(server.registry.data_dir() + "/models")) {
      on_disk.insert(entry.path().filename().string());
    }
    for (const auto& served : server.registry.List()) held.insert(served->name());
    EXPECT_EQ(on_disk, held);
  }
}

// A model deleted under a call that holds it: the call's learn fails with
// FAILED_PRECONDITION when the model is durable (its journal is closed, so
// nothing is written into a directory that is gone); a memory-only model
// lets it finish into the orphan, which nothing can reach any more. Calls
// by name get NOT_FOUND.
TEST_P(ServiceConcurrency, DeletedModelsCallsFailCleanly) {
  Server server(Options("deleted"), {.threads = 2}, std::chrono::milliseconds(0));
  ClickdService& service = server.service;
  ASSERT_TRUE(server.writer.Create(Named("doomed")).ok());
  auto held = *service.Lookup("doomed", "model");
  v1::UpdateResponse response;
  std::vector<ScoredExample> scored;
  ASSERT_TRUE(service.ApplyUpdate(*held, Impression("doomed", 1, 2), &response, &scored).ok());

  // The delete and a learner holding the model race; then the delete has won.
  absl::Status raced;
  std::thread learner([&] {
    v1::UpdateResponse r;
    std::vector<ScoredExample> s;
    raced = service.ApplyUpdate(*held, Impression("doomed", 2, 2), &r, &s);
  });
  ASSERT_TRUE(server.writer.Delete("doomed").ok());
  learner.join();
  EXPECT_TRUE(raced.ok() || raced.code() == absl::StatusCode::kFailedPrecondition) << raced;

  const absl::Status after =
      service.ApplyUpdate(*held, Impression("doomed", 3, 2), &response, &scored);
  if (durable()) {
    EXPECT_EQ(after.code(), absl::StatusCode::kFailedPrecondition) << after;
    EXPECT_EQ(held->Snapshot().status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(std::filesystem::exists(server.registry.data_dir() + "/models/doomed"));
  } else {
    EXPECT_TRUE(after.ok()) << after;
  }
  v1::PredictResponse predicted;
  EXPECT_EQ(service.ScorePredictRequest(TwoAds("doomed"), &predicted).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(service.Lookup("doomed", "model").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(server.writer.Delete("doomed").code(), absl::StatusCode::kNotFound);
}

// One name deleted and created again and again while learners hold the
// model of that name: every create succeeds, and a restart restores the
// model the name holds at the end. A deleted model's learner still waiting
// for its record's sync must not write into the directory of the model that
// took its name (its update log publishes a MANIFEST there), which made the
// create fail or the restart refuse the new model's log.
TEST(ServiceConcurrencyDurable, RecreatedModelRestartsCleanly) {
  DurabilityOptions durability = Durable("recreate", SyncMode::kEveryRequest);
  const std::string data_dir = durability.data_dir;
  RemoveOnExit remove_data_dir(data_dir);
  constexpr int kRounds = 60, kLearners = 3, kUpdatesEach = 100;
  Unexpected unexpected;
  uint64_t final_updates = 0;
  {
    ModelRegistry registry(durability);
    LocalModelWriter writer(&registry);
    ClickdService service({.registry = &registry, .writer = &writer});
    ASSERT_TRUE(writer.Create(Named("m")).ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < kLearners; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kUpdatesEach; ++i) {
          auto served = service.Lookup("m", "model");
          absl::Status s = served.status();
          if (s.ok()) {
            v1::UpdateResponse response;
            std::vector<ScoredExample> scored;
            s = service.ApplyUpdate(**served, Impression("m", t * kUpdatesEach + i, 2), &response,
                                    &scored);
          }
          if (!s.ok() && s.code() != absl::StatusCode::kNotFound &&
              s.code() != absl::StatusCode::kFailedPrecondition) {
            unexpected.Add("Update", s);
          }
        }
      });
    }
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        if (absl::Status s = writer.Delete("m"); !s.ok()) unexpected.Add("Delete", s);
        if (auto s = writer.Create(Named("m")); !s.ok()) unexpected.Add("Create", s.status());
      }
    });
    JoinAll(threads);
    auto served = registry.Get("m");
    ASSERT_NE(served, nullptr);
    final_updates = served->model().Updates();
  }
  EXPECT_EQ(unexpected.count(), 0) << unexpected.Describe();

  DurabilityOptions reopen;
  reopen.data_dir = data_dir;
  ModelRegistry restored(reopen);
  auto recovered = restored.Recover();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  ASSERT_NE(restored.Get("m"), nullptr);
  EXPECT_EQ(restored.Get("m")->model().Updates(), final_updates);
}

// --- Executor overload and shutdown ---------------------------------------

// Calls handed to a small executor from many threads while its workers are
// held: beyond the queue they are refused with RESOURCE_EXHAUSTED; a Close
// racing with more submissions cancels the queued ones and refuses later
// ones with UNAVAILABLE. Every call gets exactly one of run or refuse, and
// the model learned exactly the updates that ran.
TEST(ServiceConcurrencyExecutor, OverloadAndShutdownAnswerEveryCallOnce) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  auto served = registry.Get("default");
  std::optional<Executor> executor(std::in_place, ExecutorOptions{.threads = 2, .max_queued = 8});
  ClickdService service({.registry = &registry, .executor = &*executor});

  constexpr int kSubmitters = 4, kCallsEach = 40;
  constexpr int kCalls = kSubmitters * kCallsEach;
  Mutex gate_mu;
  CondVar gate_cv;
  bool open = false;  // guarded by gate_mu
  std::vector<std::atomic<int>> answers(kCalls);
  std::atomic<int> ran{0}, overloaded{0}, unavailable{0};
  Unexpected unexpected;

  auto wait_for_gate = [&] {
    MutexLock lock(&gate_mu);
    const auto deadline = Deadline();
    while (!open && Clock::now() < deadline) gate_cv.WaitFor(&gate_mu, deadline - Clock::now());
  };
  auto submit = [&](int call) {
    service.RunCallWork(
        call % 2 ? "default" : "",
        [&, call] {
          answers[call].fetch_add(1);
          wait_for_gate();
          v1::UpdateResponse response;
          std::vector<ScoredExample> scored;
          absl::Status s =
              service.ApplyUpdate(*served, Impression("default", call, 1), &response, &scored);
          if (!s.ok()) unexpected.Add("Update", s);
          ran.fetch_add(1);
        },
        [&, call](const absl::Status& s) {
          answers[call].fetch_add(1);
          if (s.code() == absl::StatusCode::kResourceExhausted) {
            overloaded.fetch_add(1);
          } else if (s.code() == absl::StatusCode::kUnavailable) {
            unavailable.fetch_add(1);
          } else {
            unexpected.Add("refused", s);
          }
        });
  };

  // First half, workers held: the queue fills.
  std::vector<std::thread> threads;
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsEach / 2; ++i) submit(t * kCallsEach + i);
    });
  }
  JoinAll(threads);
  EXPECT_GT(overloaded.load(), 0);
  // Second half, racing with the close at shutdown.
  for (int t = 0; t < kSubmitters; ++t) {
    threads.emplace_back([&, t] {
      for (int i = kCallsEach / 2; i < kCallsEach; ++i) submit(t * kCallsEach + i);
    });
  }
  threads.emplace_back(
      [&] { executor->Close(absl::UnavailableError("the server is shutting down")); });
  JoinAll(threads);
  {
    MutexLock lock(&gate_mu);
    open = true;
    gate_cv.SignalAll();
  }
  executor.reset();  // joins the workers, which finish the running calls

  EXPECT_EQ(unexpected.count(), 0) << unexpected.Describe();
  EXPECT_GT(unavailable.load(), 0);
  EXPECT_EQ(ran.load() + overloaded.load() + unavailable.load(), kCalls);
  for (int call = 0; call < kCalls; ++call) EXPECT_EQ(answers[call].load(), 1) << "call " << call;
  EXPECT_EQ(served->model().Updates(), static_cast<uint64_t>(ran.load()));
}

// --- Snapshots during learning, and the restore ----------------------------

// The update log of every durable model, recorded as it is appended, so
// that a test knows the log's order after snapshots have truncated it.
class LogRecorder {
 public:
  UpdateLogOpener Opener();

  void Add(const std::string& dir, uint64_t sequence, std::string_view record) {
    MutexLock lock(&mu_);
    records_[dir][sequence] = std::string(record);
  }
  // The records appended to the log in `dir`, by sequence.
  std::map<uint64_t, std::string> Records(const std::string& dir) const {
    MutexLock lock(&mu_);
    auto it = records_.find(dir);
    return it == records_.end() ? std::map<uint64_t, std::string>() : it->second;
  }

 private:
  mutable Mutex mu_;
  std::map<std::string, std::map<uint64_t, std::string>> records_ ABSL_GUARDED_BY(mu_);
};

// A FileUpdateLog that tells a LogRecorder what it appends.
class RecordingLog final : public UpdateLog {
 public:
  RecordingLog(std::unique_ptr<UpdateLog> log, LogRecorder* recorder, std::string dir)
      : log_(std::move(log)), recorder_(recorder), dir_(std::move(dir)) {}

  absl::StatusOr<uint64_t> Append(std::string_view record) override {
    absl::StatusOr<uint64_t> sequence = log_->Append(record);
    if (sequence.ok()) recorder_->Add(dir_, *sequence, record);
    return sequence;
  }
  absl::Status WaitDurable(uint64_t sequence) override { return log_->WaitDurable(sequence); }
  absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) override {
    return log_->ReadAfter(after, fn);
  }
  absl::Status TruncateThrough(uint64_t sequence) override {
    return log_->TruncateThrough(sequence);
  }
  absl::Status ResetAfter(uint64_t sequence) override { return log_->ResetAfter(sequence); }
  uint64_t first_sequence() const override { return log_->first_sequence(); }
  uint64_t last_sequence() const override { return log_->last_sequence(); }
  uint64_t size_bytes() const override { return log_->size_bytes(); }

 private:
  const std::unique_ptr<UpdateLog> log_;
  LogRecorder* const recorder_;
  const std::string dir_;
};

UpdateLogOpener LogRecorder::Opener() {
  return [this](Env* env, const std::string& dir, const UpdateLogOptions& options,
                UpdateLogRecovery* recovery,
                const LogRecoveryOptions& how) -> absl::StatusOr<std::unique_ptr<UpdateLog>> {
    auto log = FileUpdateLog::Open(env, dir, options, recovery, how);
    if (!log.ok()) return log.status();
    return std::make_unique<RecordingLog>(*std::move(log), this, dir);
  };
}

// The state digest of the model a snapshot file holds.
absl::StatusOr<std::string> SnapshotDigest(const std::string& path) {
  auto contents = ReadSnapshot(Env::Default(), path);
  if (!contents.ok()) return contents.status();
  auto model = CreateModel(contents->config);
  if (!model.ok()) return model.status();
  if (absl::Status s = (*model)->ImportState(contents->state); !s.ok()) return s;
  return StateDigest(**model);
}

// A durable model learns from many threads (through the executor, two
// learners at once, group-committed syncs) while it is snapshotted by the
// snapshotter's periodic pass, by SnapshotModel's queue and directly, and
// its state digest is read. Then:
//   * the update log holds every acknowledged update exactly once;
//   * every snapshot holds exactly the log's first `sequence` records (the
//     model that learned them, in log order, has its digest);
//   * after a few more updates, a restart from the data directory (newest
//     snapshot + replay) equals the live model, and both equal a model that
//     learned the acknowledged requests in log order.
TEST(ServiceConcurrencyDurable, SnapshotsDuringLearningRestoreToTheLogOrder) {
  LogRecorder recorder;
  DurabilityOptions durability = Durable("restore", SyncMode::kEveryRequest);
  durability.journal.open_log = recorder.Opener();
  durability.journal.keep_snapshots = 1000;  // every snapshot stays readable
  const std::string data_dir = durability.data_dir;
  RemoveOnExit remove_data_dir(data_dir);
  const std::string log_dir = data_dir + "/models/default/log";

  constexpr int kSubmitters = 3, kUpdatesEach = 40, kTail = 12, kCandidates = 3;
  constexpr int kAcked = kSubmitters * kUpdatesEach + kTail;
  std::map<uint64_t, v1::UpdateRequest> requests;  // by tag
  for (uint64_t tag = 0; tag < kAcked; ++tag) {
    requests[tag] = Impression("default", tag, kCandidates);
  }
  Unexpected unexpected;
  Mutex snapshots_mu;
  std::map<uint64_t, std::string> snapshot_digests;  // by sequence; guarded by snapshots_mu
  auto check_snapshot = [&](const absl::StatusOr<SnapshotReport>& report) {
    if (!report.ok()) return unexpected.Add("Snapshot", report.status());
    auto digest = SnapshotDigest(report->path);
    if (!digest.ok()) return unexpected.Add("reading a snapshot", digest.status());
    MutexLock lock(&snapshots_mu);
    auto [it, inserted] = snapshot_digests.emplace(report->sequence, *digest);
    if (!inserted && it->second != *digest) {
      unexpected.Add("Snapshot", absl::InternalError(absl::StrCat("two snapshots at sequence ",
                                                                  report->sequence, " differ")));
    }
  };

  std::string live_digest;
  uint64_t snapshotted_through = 0;
  {
    Server server(std::move(durability),
                  {.threads = 3, .max_queued = 4096, .max_running_per_key = 2},
                  std::chrono::milliseconds(3));
    ClickdService& service = server.service;
    ASSERT_TRUE(server.writer.Create(ModelConfig{}).ok());
    auto served = *service.Lookup("default", "model");
    auto learn = [&](uint64_t tag) {
      v1::UpdateResponse response;
      std::vector<ScoredExample> scored;
      absl::Status s = service.ApplyUpdate(*served, requests.at(tag), &response, &scored);
      if (!s.ok() || response.applied() != kCandidates) unexpected.Add("Update", s);
    };

    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kSubmitters; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kUpdatesEach; ++i) {
          const uint64_t tag = uint64_t(t) * kUpdatesEach + i;
          service.RunCallWork(
              "default", [&, tag] { learn(tag); },
              [&](const absl::Status& s) { unexpected.Add("refused", s); });
        }
      });
    }
    constexpr int kAsyncSnapshots = 15;
    Countdown async_done(kAsyncSnapshots);
    threads.emplace_back([&] {  // SnapshotModel's path
      for (int i = 0; i < kAsyncSnapshots; ++i) {
        server.snapshotter->SnapshotAsync(served, [&](absl::StatusOr<SnapshotReport> report) {
          check_snapshot(report);
          async_done.Done();
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    threads.emplace_back([&] {  // direct snapshots, as at shutdown; and digests
      for (int i = 0; i < 200 && !done.load(); ++i) {
        if (i % 3 == 0) check_snapshot(served->Snapshot());
        // Graceful shutdown's pass, racing the snapshotter's periodic one.
        if (i % 3 == 1 && server.snapshotter->SnapshotChanged() != 0) {
          unexpected.Add("SnapshotChanged", absl::InternalError("a snapshot failed"));
        }
        service.RunCallWork(
            "default", [&] { (void)StateDigest(served->model()); },
            [&](const absl::Status& s) { unexpected.Add("refused", s); });
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    for (int t = 0; t < kSubmitters + 1; ++t) threads[t].join();
    ASSERT_TRUE(server.executor.WaitIdle(Deadline()));
    ASSERT_TRUE(async_done.Wait(Deadline()));
    done.store(true);
    JoinAll(threads);
    ASSERT_TRUE(server.executor.WaitIdle(Deadline()));
    server.snapshotter.reset();  // no periodic snapshot after the tail below
    snapshotted_through = served->journal()->log_sequence();
    for (int i = 0; i < kTail; ++i) learn(kSubmitters * kUpdatesEach + i);
    live_digest = StateDigest(served->model());
    EXPECT_EQ(served->model().Updates(), uint64_t{kAcked} * kCandidates);
    EXPECT_EQ(served->snapshot_stats().failures, 0u);
    EXPECT_EQ(server.snapshots_observed.load(),
              static_cast<int>(served->snapshot_stats().successes));
  }
  ASSERT_EQ(unexpected.count(), 0) << unexpected.Describe();

  // The log: sequences 1..kAcked, each acknowledged request exactly once.
  const std::map<uint64_t, std::string> records = recorder.Records(log_dir);
  ASSERT_EQ(records.size(), static_cast<size_t>(kAcked));
  std::vector<uint64_t> log_order;
  std::set<uint64_t> tags;
  for (const auto& [sequence, record] : records) {
    EXPECT_EQ(sequence, log_order.size() + 1);
    auto tag = TagOf(record);
    ASSERT_TRUE(tag.ok()) << tag.status();
    log_order.push_back(*tag);
    tags.insert(*tag);
  }
  EXPECT_EQ(tags.size(), static_cast<size_t>(kAcked));
  EXPECT_EQ(*tags.rbegin(), static_cast<uint64_t>(kAcked - 1));

  // The reference: a memory-only model that learns the requests in log
  // order; every snapshot equals it at its sequence.
  ModelRegistry reference_registry;
  ASSERT_TRUE(reference_registry.Create(ModelConfig{}).ok());
  ClickdService reference({.registry = &reference_registry});
  auto reference_model = reference_registry.Get("default");
  std::map<uint64_t, std::string> reference_digests = {{0, StateDigest(reference_model->model())}};
  for (size_t i = 0; i < log_order.size(); ++i) {
    v1::UpdateResponse response;
    std::vector<ScoredExample> scored;
    ASSERT_TRUE(
        reference.ApplyUpdate(*reference_model, requests.at(log_order[i]), &response, &scored)
            .ok());
    reference_digests[i + 1] = StateDigest(reference_model->model());
  }
  EXPECT_EQ(reference_digests.at(kAcked), live_digest);
  {
    MutexLock lock(&snapshots_mu);
    EXPECT_FALSE(snapshot_digests.empty());
    for (const auto& [sequence, digest] : snapshot_digests) {
      ASSERT_LE(sequence, snapshotted_through);
      EXPECT_EQ(digest, reference_digests.at(sequence)) << "snapshot at sequence " << sequence;
    }
  }

  // The restart: newest snapshot, then the records after it.
  DurabilityOptions reopen;
  reopen.data_dir = data_dir;
  ModelRegistry restored(reopen);
  auto recovered = restored.Recover();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  ASSERT_EQ(recovered->size(), 1u);
  const RecoveryReport& report = (*recovered)[0].report;
  EXPECT_GT(report.snapshot_sequence, 0u);
  EXPECT_LE(report.snapshot_sequence, snapshotted_through);
  EXPECT_EQ(report.replayed_records, kAcked - report.snapshot_sequence);
  EXPECT_EQ(StateDigest(restored.Get("default")->model()), live_digest);
}

}  // namespace
}  // namespace clickd
