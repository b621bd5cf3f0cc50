#include "server/load_metrics.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <string>

#include "core/serving/registry.h"

namespace clickd {
namespace {

using metrics::MetricFamily;

// Each unlabelled family's value, by name.
std::map<std::string, double> Values(const metrics::Registry& registry) {
  std::map<std::string, double> out;
  for (const MetricFamily& family : registry.Collect()) {
    EXPECT_EQ(family.metric.size(), 1u) << family.name;
    if (family.metric.size() == 1) out[family.name] = metrics::ValueOf(family, family.metric[0]);
  }
  return out;
}

TEST(LoadMetrics, ReportTheQueueAndTheWorkersBesideTheirLimits) {
  Executor executor({.threads = 1, .max_queued = 5, .max_running_per_key = 1});
  ModelRegistry models;
  ClickdService main({.registry = &models});
  ClickdService admin({.registry = &models});
  metrics::Registry registry;
  RegisterLoadMetrics(&registry, NewServerLoadReader(&executor, {&main, &admin}, 7));
  const std::map<std::string, double> idle = {{"clickd_executor_queued_calls", 0},
                                              {"clickd_executor_running_calls", 0},
                                              {"clickd_executor_max_queued_calls", 5},
                                              {"clickd_executor_worker_threads", 1},
                                              {"clickd_open_streams", 0},
                                              {"clickd_max_open_streams", 7}};
  EXPECT_EQ(Values(registry), idle);

  // One task runs on the one worker, held by a gate; two more wait.
  std::promise<void> started;
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  ASSERT_TRUE(executor
                  .Submit("", {[&] {
                                 started.set_value();
                                 opened.wait();
                               },
                               nullptr})
                  .ok());
  started.get_future().wait();
  ASSERT_TRUE(executor.Submit("", {[] {}, nullptr}).ok());
  ASSERT_TRUE(executor.Submit("m", {[] {}, nullptr}).ok());
  std::map<std::string, double> busy = Values(registry);
  EXPECT_EQ(busy["clickd_executor_running_calls"], 1);
  EXPECT_EQ(busy["clickd_executor_queued_calls"], 2);

  gate.set_value();
  ASSERT_TRUE(executor.WaitIdle(std::chrono::steady_clock::now() + std::chrono::minutes(5)));
  EXPECT_EQ(Values(registry), idle);
}

}  // namespace
}  // namespace clickd
