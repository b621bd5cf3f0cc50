// The service's request handling without the gRPC transport, so that the
// TSan build checks our part of the concurrent Predict + Update path
// (Debian's gRPC is not TSan-instrumented, so the end-to-end tests in
// tests/server_integration_test.cc cannot run under TSan).
#include "server/service.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <thread>

#include "core/model/state_digest.h"
#include "core/persist/fault_injection_env.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

v1::Example AdExample(const std::string& ad) {
  v1::Example e;
  auto* ns = e.add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_name(ad);
  return e;
}

v1::UpdateRequest Clicks(int n, int seed) {
  v1::UpdateRequest r;
  r.set_model("default");
  auto* imp = r.add_impressions();
  auto* user = imp->mutable_context()->add_namespaces();
  user->set_name("user");
  user->add_features()->set_id(seed % 7);
  for (int i = 0; i < n; ++i) {
    auto* c = imp->add_candidates();
    *c->mutable_example() = AdExample(i % 2 ? "good" : "bad");
    c->set_label(i % 2 ? 1.0f : 0.0f);
  }
  return r;
}

TEST(ClickdService, ConcurrentPredictUpdateAndModelChurn) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  std::atomic<int> health_updates{0};
  ClickdService service(
      {.registry = &registry, .on_models_changed = [&] { health_updates.fetch_add(1); }});

  constexpr int kUpdates = 300, kPredicts = 600;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < kUpdates; ++i) {
      v1::UpdateResponse response;
      std::vector<ScoredExample> scored;
      auto served = service.Lookup("default", "model");
      if (!served.ok() || !service.ApplyUpdate(**served, Clicks(4, i), &response, &scored).ok()) {
        failures.fetch_add(1);
      }
    }
  });
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      v1::PredictRequest request;
      request.set_model("default");
      *request.add_candidates() = AdExample("good");
      *request.add_candidates() = AdExample("bad");
      for (int i = 0; i < kPredicts; ++i) {
        v1::PredictResponse response;
        if (!service.ScorePredictRequest(request, &response).ok()) failures.fetch_add(1);
        for (const auto& p : response.predictions()) {
          if (!(p.prediction() > 0 && p.prediction() < 1)) failures.fetch_add(1);
        }
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50; ++i) {
      ModelConfig other;
      other.name = "other" + std::to_string(i % 3);
      (void)registry.Create(other);
      (void)registry.Delete("other" + std::to_string((i + 1) % 3));
      (void)registry.List();
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto served = service.Lookup("default", "model");
  ASSERT_TRUE(served.ok());
  EXPECT_EQ((*served)->model().Updates(), static_cast<uint64_t>(4 * kUpdates));
  EXPECT_EQ((*served)->ProgressiveSummary().examples, static_cast<uint64_t>(4 * kUpdates));
}

TEST(ClickdService, RejectedBatchAppliesNothing) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  ClickdService service({.registry = &registry});
  auto served = *service.Lookup("default", "model");
  v1::UpdateRequest request = Clicks(5, 1);
  request.mutable_impressions(0)->mutable_candidates(4)->set_label(0.5f);
  v1::UpdateResponse response;
  std::vector<ScoredExample> scored;
  const absl::Status s = service.ApplyUpdate(*served, request, &response, &scored);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "impressions[0].candidates[4].label is 0.5; logistic loss takes labels 0/1 or -1/+1");
  EXPECT_EQ(served->model().Updates(), 0u);
  EXPECT_EQ(served->model().Stats().coordinates, 0u);
  EXPECT_TRUE(scored.empty());
}

// The adversarial update of issue 10: a finite but huge importance used to
// turn every prediction NaN a few updates later. It is refused whole, with
// the model unchanged.
TEST(ClickdService, HugeImportanceIsRefusedAndAppliesNothing) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  ClickdService service({.registry = &registry});
  auto served = *service.Lookup("default", "model");
  v1::UpdateResponse response;
  std::vector<ScoredExample> scored;
  ASSERT_TRUE(service.ApplyUpdate(*served, Clicks(4, 1), &response, &scored).ok());
  const std::string before = served->model().SerializeState();
  v1::UpdateRequest request = Clicks(4, 2);
  request.mutable_impressions(0)->mutable_candidates(3)->set_importance(1e20f);
  scored.clear();
  const absl::Status s = service.ApplyUpdate(*served, request, &response, &scored);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "impressions[0].candidates[3].importance is 1e+20; the limit is 10000");
  EXPECT_EQ(served->model().SerializeState(), before);
  EXPECT_TRUE(scored.empty());
}

// A service over one durable default model whose files go through a
// fault-injecting Env.
class DurableService : public ::testing::Test {
 protected:
  DurableService() : registry_(Options(&env_)), service_({.registry = &registry_}) {
    EXPECT_TRUE(registry_.Create(ModelConfig{}).ok());
    served_ = *service_.Lookup("default", "model");
  }

  static DurabilityOptions Options(Env* env) {
    static int n = 0;
    DurabilityOptions durability;
    durability.data_dir = ::testing::TempDir() + "/service_durable_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
    std::filesystem::remove_all(durability.data_dir);  // PIDs repeat across runs
    durability.journal.env = env;
    return durability;
  }

  absl::Status Update(const v1::UpdateRequest& request) {
    v1::UpdateResponse response;
    std::vector<ScoredExample> scored;
    return service_.ApplyUpdate(*served_, request, &response, &scored);
  }

  FaultInjectionEnv env_{Env::Default()};
  ModelRegistry registry_;
  ClickdService service_;
  std::shared_ptr<ServedModel> served_;
};

// A full disk: Update fails with UNAVAILABLE naming the update log, applies
// nothing (the model's state and version are unchanged), Predict keeps
// serving, and once space is back updates are accepted again.
TEST_F(DurableService, FullDiskRefusesUpdatesAndKeepsServingPredict) {
  ASSERT_TRUE(Update(Clicks(4, 1)).ok());
  const std::string before = served_->model().SerializeState();

  env_.SetWriteBudget(10);  // the next record does not fit
  absl::Status full = Update(Clicks(4, 2));
  EXPECT_EQ(full.code(), absl::StatusCode::kUnavailable) << full;
  EXPECT_NE(full.message().find("update log"), std::string::npos) << full;
  EXPECT_EQ(served_->model().SerializeState(), before);
  EXPECT_EQ(served_->model().Updates(), 4u);

  v1::PredictRequest predict;
  predict.set_model("default");
  *predict.add_candidates() = AdExample("good");
  v1::PredictResponse prediction;
  EXPECT_TRUE(service_.ScorePredictRequest(predict, &prediction).ok());
  EXPECT_EQ(prediction.predictions_size(), 1);

  env_.SetWriteBudget(-1);
  EXPECT_TRUE(Update(Clicks(4, 3)).ok());
  EXPECT_EQ(served_->model().Updates(), 8u);
}

// A failed fsync: the update is not acknowledged (UNAVAILABLE: its outcome
// is unknown, as with a lost reply), and the log refuses later appends,
// since what reached the disk is unknown; a restart recovers from the disk.
TEST_F(DurableService, FailedSyncIsUnavailableAndStaysSo) {
  env_.SetSyncFails(true);
  EXPECT_EQ(Update(Clicks(2, 1)).code(), absl::StatusCode::kUnavailable);
  env_.SetSyncFails(false);
  EXPECT_EQ(Update(Clicks(2, 2)).code(), absl::StatusCode::kUnavailable);
}

// Without --data_dir there is nothing to snapshot into.
TEST(ClickdService, SnapshotOfAMemoryOnlyModelIsFailedPrecondition) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  auto served = registry.Get("default");
  EXPECT_EQ(served->Snapshot().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

TEST(ClickdService, MinModelVersionWithoutReplicationIsFailedPreconditionNamingBoth) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  ClickdService service({.registry = &registry});
  v1::UpdateResponse updated;
  std::vector<ScoredExample> scored;
  auto served = service.Lookup("default", "model");
  ASSERT_TRUE(served.ok());
  ASSERT_TRUE(service.ApplyUpdate(**served, Clicks(4, 1), &updated, &scored).ok());
  EXPECT_EQ(updated.model_version(), 4u);

  v1::PredictRequest request;
  request.set_model("default");
  *request.add_candidates() = AdExample("good");
  request.set_min_model_version(4);
  v1::PredictResponse response;
  ASSERT_TRUE(service.ScorePredictRequest(request, &response).ok());
  EXPECT_EQ(response.model_version(), 4u);

  request.set_min_model_version(5);
  absl::Status behind = service.ScorePredictRequest(request, &response);
  EXPECT_EQ(behind.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(behind.message().find("model_version 4"), std::string::npos) << behind;
  EXPECT_NE(behind.message().find("min_model_version 5"), std::string::npos) << behind;
}

TEST(ClickdService, IdempotencyKeyOverTheLimitIsRefusedAndLearnsNothing) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  ClickdService service({.registry = &registry});
  auto served = service.Lookup("default", "model");
  ASSERT_TRUE(served.ok());
  v1::UpdateRequest request = Clicks(2, 3);
  request.set_idempotency_key(std::string(129, 'k'));
  v1::UpdateResponse response;
  std::vector<ScoredExample> scored;
  absl::Status refused = service.ApplyUpdate(**served, request, &response, &scored);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("idempotency_key has 129 bytes; the limit is 128"),
            std::string::npos)
      << refused;
  EXPECT_EQ((*served)->model().Updates(), 0u);
  // A CR LF would forge NATS headers in the message id: refused, nothing learned.
  request.set_idempotency_key("k\r\nNats-Expected-Stream: X");
  refused = service.ApplyUpdate(**served, request, &response, &scored);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("idempotency_key has byte 13 at offset 1"), std::string::npos)
      << refused;
  EXPECT_EQ((*served)->model().Updates(), 0u);
  // At the limit it is accepted, and a retry with it is a duplicate.
  request.set_idempotency_key(std::string(128, 'k'));
  EXPECT_TRUE(service.ApplyUpdate(**served, request, &response, &scored).ok());
  EXPECT_FALSE(response.duplicate());
  EXPECT_EQ(response.applied(), 2u);
  EXPECT_TRUE(service.ApplyUpdate(**served, request, &response, &scored).ok());
  EXPECT_TRUE(response.duplicate());
  EXPECT_EQ(response.applied(), 0u);
  EXPECT_EQ((*served)->model().Updates(), 2u);
}

// `e` with its Feature messages in another wire form: packed names and ids
// (`keys` false) or keys hashed as a client does (`keys` true).
v1::Example Repacked(const v1::Example& e, bool keys, const FeatureHasher& hasher) {
  v1::Example out;
  for (const v1::Namespace& ns : e.namespaces()) {
    v1::Namespace* to = out.add_namespaces();
    to->set_name(ns.name());
    const uint64_t ns_hash = hasher.NamespaceHash(ns.name());
    for (const v1::Feature& f : ns.features()) {
      const bool id = f.key_case() == v1::Feature::kId;
      if (keys) {
        to->add_keys(id ? FeatureHasher::IdKey(ns_hash, f.id())
                        : FeatureHasher::NamedKey(ns_hash, f.name()));
      } else if (id) {
        to->add_ids(f.id());
      } else {
        to->add_names(f.name());
      }
    }
  }
  return out;
}

// The same Updates and Predicts sent as Feature messages, packed names and
// ids, and client-hashed keys: the same model state and the same margins.
TEST(ClickdService, EveryWireFormLearnsAndPredictsAlike) {
  std::vector<std::string> digests;
  std::vector<std::vector<double>> margins;
  for (int form = 0; form < 3; ++form) {
    ModelRegistry registry;
    ModelConfig config;
    config.hashing.seed = 5;
    config.hashing.interactions = {{"user", "ad"}};
    ASSERT_TRUE(registry.Create(config).ok());
    ClickdService service({.registry = &registry});
    auto served = *service.Lookup("default", "model");
    const FeatureHasher& hasher = served->model().hasher();
    auto rewrite = [&](v1::Example* e) {
      if (form > 0) *e = Repacked(*e, form == 2, hasher);
    };
    for (int i = 0; i < 20; ++i) {
      v1::UpdateRequest request = Clicks(4, i);
      rewrite(request.mutable_impressions(0)->mutable_context());
      for (v1::LabeledExample& c : *request.mutable_impressions(0)->mutable_candidates()) {
        rewrite(c.mutable_example());
      }
      v1::UpdateResponse response;
      std::vector<ScoredExample> scored;
      ASSERT_TRUE(service.ApplyUpdate(*served, request, &response, &scored).ok());
    }
    digests.push_back(StateDigest(served->model()));
    v1::PredictRequest request;
    request.set_model("default");
    *request.mutable_context() = Clicks(1, 3).impressions(0).context();
    *request.add_candidates() = AdExample("good");
    *request.add_candidates() = AdExample("bad");
    rewrite(request.mutable_context());
    for (v1::Example& c : *request.mutable_candidates()) rewrite(&c);
    v1::PredictResponse response;
    ASSERT_TRUE(service.ScorePredictRequest(request, &response).ok());
    std::vector<double> m;
    for (const v1::Prediction& p : response.predictions()) m.push_back(p.margin());
    EXPECT_NE(m[0], m[1]);
    margins.push_back(m);
  }
  EXPECT_EQ(digests[1], digests[0]);
  EXPECT_EQ(digests[2], digests[0]);
  EXPECT_EQ(margins[1], margins[0]);
  EXPECT_EQ(margins[2], margins[0]);
}

// A million packed values are refused by the cost check before any is read.
TEST(ClickdService, MillionPackedValuesAreRefusedByTheCostCheck) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(ModelConfig{}).ok());
  ClickdService service({.registry = &registry});
  v1::PredictRequest request;
  request.set_model("default");
  v1::Namespace* ns = request.add_candidates()->add_namespaces();
  ns->set_name("ad");
  ns->add_names("a");
  for (int i = 0; i < 1'000'000; ++i) ns->add_values(std::nanf(""));
  v1::PredictResponse response;
  const absl::Status s = service.ScorePredictRequest(request, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "candidates[0] (with the context) yields 1000001 features after interactions; the "
            "limit is 65536 (max_features_after_interactions)");
}

}  // namespace
}  // namespace clickd
