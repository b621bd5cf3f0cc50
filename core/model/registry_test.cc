#include "core/model/registry.h"

#include <thread>

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
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      (void)registry.Create(Named("m" + std::to_string(i % 5)));
      (void)registry.Delete("m" + std::to_string((i + 2) % 5));
    }
  });
  for (int i = 0; i < 2000; ++i) {
    if (auto m = registry.Get("m" + std::to_string(i % 5))) (void)m->model().Updates();
    (void)registry.List();
  }
  churn.join();
}

TEST(ServedModel, RecordsLifetimeProgressiveMetrics) {
  ModelRegistry registry;
  auto served = *registry.Create(Named("m"));
  served->RecordProgressive({{-1.0f, 0.0f, 1.0f}, {1.0f, 1.0f, 1.0f}});
  const MetricsSummary s = served->ProgressiveSummary();
  EXPECT_EQ(s.examples, 2u);
  EXPECT_DOUBLE_EQ(s.auc, 1.0);
}

}  // namespace
}  // namespace clickd
