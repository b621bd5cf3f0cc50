#include "core/serving/registry.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "core/persist/fault_injection_env.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

ModelConfig Named(const std::string& name) {
  ModelConfig c;
  c.name = name;
  return c;
}

TEST(ModelRegistry, CreateGetListDelete) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(Named("b")).ok());
  ASSERT_TRUE(registry.Create(Named("a")).ok());
  EXPECT_EQ(registry.Create(Named("a")).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(registry.Get("a"), nullptr);
  EXPECT_EQ(registry.Get("c"), nullptr);
  const auto all = registry.List();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->model().config().name, "a");
  EXPECT_TRUE(registry.Delete("a").ok());
  EXPECT_EQ(registry.Delete("a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.size(), 1u);
}

TEST(ModelRegistry, RefusesModelsBeyondTheLimit) {
  ModelRegistry registry({}, RegistryLimits{.max_models = 2});
  ASSERT_TRUE(registry.Create(Named("a")).ok());
  ASSERT_TRUE(registry.Create(Named("b")).ok());
  const absl::Status refused = registry.Create(Named("c")).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "the server holds 2 models; the limit is 2 (--max_models)");
  EXPECT_EQ(registry.Get("c"), nullptr);
  // A name that exists is still AlreadyExists, and a delete makes room.
  EXPECT_EQ(registry.Create(Named("a")).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(registry.Delete("a").ok());
  EXPECT_TRUE(registry.Create(Named("c")).ok());
}

TEST(ModelRegistry, RejectsBadNames) {
  ModelRegistry registry;
  for (const char* bad : {"", "has space", "slash/name", "\xc3\xa9"}) {
    const auto s = registry.Create(Named(bad)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("name"), std::string::npos);
  }
  EXPECT_FALSE(registry.Create(Named(std::string(129, 'x'))).ok());
  EXPECT_TRUE(registry.Create(Named(std::string(128, 'x'))).ok());
}

// A handle keeps its model alive after Delete, so in-flight requests finish.
TEST(ModelRegistry, HandleOutlivesDelete) {
  ModelRegistry registry;
  ASSERT_TRUE(registry.Create(Named("m")).ok());
  auto handle = registry.Get("m");
  ASSERT_TRUE(registry.Delete("m").ok());
  Example e;
  EXPECT_DOUBLE_EQ(handle->model().Predict(e), 0.5);
}

TEST(ModelRegistry, ConcurrentGetAndCreateDelete) {
  ModelRegistry registry;
  // What the churn leaves: each create succeeds when the name is free, each
  // delete when it is taken, in the one thread's order.
  std::set<std::string> expected;
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      const std::string created = "m" + std::to_string(i % 5);
      const std::string deleted = "m" + std::to_string((i + 2) % 5);
      EXPECT_EQ(registry.Create(Named(created)).ok(), expected.insert(created).second) << i;
      EXPECT_EQ(registry.Delete(deleted).ok(), expected.erase(deleted) == 1) << i;
    }
  });
  for (int i = 0; i < 2000; ++i) {
    const std::string name = "m" + std::to_string(i % 5);
    if (auto m = registry.Get(name)) {
      EXPECT_EQ(m->name(), name);  // never another model, never a half-made one
      EXPECT_EQ(m->model().Updates(), 0u);
    }
    for (const auto& listed : registry.List()) EXPECT_NE(listed, nullptr);
  }
  churn.join();
  // The registry ends as the churn left it.
  std::set<std::string> listed;
  for (const auto& m : registry.List()) listed.insert(m->name());
  EXPECT_EQ(listed, expected);
  EXPECT_FALSE(expected.empty());
  for (int k = 0; k < 5; ++k) {
    const std::string name = "m" + std::to_string(k);
    EXPECT_EQ(registry.Get(name) != nullptr, expected.count(name) == 1) << name;
  }
}

TEST(ServedModel, RecordsLifetimeProgressiveMetrics) {
  ModelRegistry registry;
  auto served = *registry.Create(Named("m"));
  served->RecordProgressive({{-1.0f, 0.0f, 1.0f}, {1.0f, 1.0f, 1.0f}});
  const MetricsSummary s = served->ProgressiveSummary();
  EXPECT_EQ(s.examples, 2u);
  EXPECT_DOUBLE_EQ(s.auc, 1.0);
}

std::string NewDataDir() {
  static int n = 0;
  const std::string dir = ::testing::TempDir() + "/registry_test_" + std::to_string(getpid()) +
                          "_" + std::to_string(n++);
  std::filesystem::remove_all(dir);  // PIDs repeat across runs
  return dir;
}

std::vector<TrainingExample> Batch(const std::vector<Example>& examples) {
  std::vector<TrainingExample> batch;
  for (size_t i = 0; i < examples.size(); ++i) {
    batch.push_back({nullptr, &examples[i], i % 2 ? 1.0f : 0.0f, 1.0f});
  }
  return batch;
}

std::vector<Example> Ads(int n) {
  std::vector<Example> out(n);
  for (int i = 0; i < n; ++i) out[i].namespaces.push_back({"ad", {Feature::WithId(i % 5)}});
  return out;
}

TEST(DurableRegistry, RecoverRestoresEveryModelAsLearned) {
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  const std::vector<Example> ads = Ads(20);
  std::string a_state, b_state;
  {
    ModelRegistry registry(options);
    ASSERT_TRUE(registry.Recover().ok());
    auto a = *registry.Create(Named("a"));
    auto b = *registry.Create(Named("b"));
    ASSERT_TRUE(a->Learn(Batch(ads)).ok());
    ASSERT_TRUE(b->Learn(Batch(ads)).ok());
    ASSERT_TRUE(b->Snapshot().ok());
    ASSERT_TRUE(b->Learn(Batch(ads)).ok());
    a_state = a->model().SerializeState();
    b_state = b->model().SerializeState();
    EXPECT_EQ(b->snapshot_stats().successes, 1u);
  }
  ModelRegistry restarted(options);
  auto recovered = restarted.Recover();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  ASSERT_EQ(recovered->size(), 2u);
  EXPECT_EQ((*recovered)[1].report.snapshot_sequence, 1u);
  EXPECT_EQ((*recovered)[1].report.replayed_records, 1u);
  EXPECT_EQ(restarted.Get("a")->model().SerializeState(), a_state);
  EXPECT_EQ(restarted.Get("b")->model().SerializeState(), b_state);
  EXPECT_TRUE(restarted.Get("a")->durable());
}

TEST(DurableRegistry, DeleteRemovesTheModelForGood) {
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  const std::vector<Example> ads = Ads(4);
  {
    ModelRegistry registry(options);
    auto a = *registry.Create(Named("a"));
    ASSERT_TRUE(a->Learn(Batch(ads)).ok());
    ASSERT_TRUE(registry.Delete("a").ok());
    // A request still holding the deleted model cannot write into its directory.
    EXPECT_EQ(a->Learn(Batch(ads)).status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(a->Snapshot().status().code(), absl::StatusCode::kFailedPrecondition);
    // A new model of the same name starts empty.
    auto again = *registry.Create(Named("a"));
    EXPECT_EQ(again->model().Updates(), 0u);
  }
  ModelRegistry restarted(options);
  ASSERT_TRUE(restarted.Recover().ok());
  ASSERT_NE(restarted.Get("a"), nullptr);
  EXPECT_EQ(restarted.Get("a")->model().Updates(), 0u);
}

TEST(DurableRegistry, DeleteLeavesNoDirectoryAndRecoverFinishesInterruptedDeletes) {
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  const std::string models = options.data_dir + "/models";
  {
    ModelRegistry registry(options);
    auto a = *registry.Create(Named("a"));
    ASSERT_TRUE(a->Learn(Batch(Ads(4))).ok());
    ASSERT_TRUE(a->Snapshot().ok());
    ASSERT_TRUE(registry.Create(Named("b")).ok());
    ASSERT_TRUE(registry.Delete("a").ok());
  }
  auto listed = Env::Default()->ListDir(models);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, std::vector<std::string>{"b"});
  // A crash after the rename left a tombstone with files in it.
  const std::string tombstone = models + "/.deleted-c-123";
  ASSERT_TRUE(Env::Default()->CreateDirs(tombstone + "/log").ok());
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), tombstone + "/log/1.log", [](WritableFile* f) {
                return f->Append("x");
              }).ok());
  ModelRegistry restarted(options);
  ASSERT_TRUE(restarted.Recover().ok());
  EXPECT_EQ(restarted.size(), 1u);
  listed = Env::Default()->ListDir(models);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, std::vector<std::string>{"b"});
}

TEST(DurableRegistry, UnrestorableModelFailsRecoveryNamingIt) {
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  {
    ModelRegistry registry(options);
    ASSERT_TRUE(registry.Create(Named("a")).ok());
  }
  // A damaged MODEL file: the server must not come up without the model.
  const std::string model_file = options.data_dir + "/models/a/MODEL";
  auto bytes = ReadWholeFile(Env::Default(), model_file);
  ASSERT_TRUE(bytes.ok());
  (*bytes)[bytes->size() - 1] ^= 1;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), model_file, [&](WritableFile* f) {
                return f->Append(*bytes);
              }).ok());
  ModelRegistry restarted(options);
  auto recovered = restarted.Recover();
  EXPECT_EQ(recovered.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(recovered.status().message().find("models/a"), std::string::npos) << recovered.status();
}

TEST(DurableRegistry, CreateOnAnUnwritableDiskIsUnavailableAndAddsNothing) {
  FaultInjectionEnv env(Env::Default());
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  options.journal.env = &env;
  ModelRegistry registry(options);
  env.SetRenameFails(true);
  EXPECT_EQ(registry.Create(Named("a")).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(registry.Get("a"), nullptr);
  env.SetRenameFails(false);
  EXPECT_TRUE(registry.Create(Named("a")).ok());
}

TEST(DurableRegistry, SyncObserverSeesEverySync) {
  DurabilityOptions options;
  options.data_dir = NewDataDir();
  std::atomic<int> syncs{0};
  options.sync_observer = [&syncs](const std::string& model) {
    EXPECT_EQ(model, "a");
    return [&syncs](double seconds) {
      EXPECT_GE(seconds, 0);
      syncs.fetch_add(1);
    };
  };
  ModelRegistry registry(options);
  auto a = *registry.Create(Named("a"));
  const std::vector<Example> ads = Ads(2);
  ASSERT_TRUE(a->Learn(Batch(ads)).ok());
  ASSERT_TRUE(a->Learn(Batch(ads)).ok());
  EXPECT_EQ(syncs.load(), 2);
}

}  // namespace
}  // namespace clickd
