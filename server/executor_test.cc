#include "server/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "core/base/mutex.h"

namespace clickd {
namespace {

using std::chrono::steady_clock;

// A gate a task waits on until the test opens it.
class Gate {
 public:
  void Open() { opened_.set_value(); }
  void Wait() { shared_.wait(); }

 private:
  std::promise<void> opened_;
  std::shared_future<void> shared_ = opened_.get_future().share();
};

Executor::Task RunOnly(std::function<void()> run) { return {std::move(run), nullptr}; }

TEST(Executor, RunsEveryTask) {
  Executor executor({.threads = 2, .max_queued = 100, .max_running_per_key = 1});
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(executor.Submit(i % 2 ? "m" : "", RunOnly([&] { ++ran; })).ok());
  }
  EXPECT_TRUE(executor.WaitIdle(steady_clock::now() + std::chrono::minutes(5)));
  EXPECT_EQ(ran.load(), 50);
}

TEST(Executor, RefusesBeyondTheQueueLimit) {
  Executor executor({.threads = 1, .max_queued = 2, .max_running_per_key = 1});
  Gate gate;
  std::promise<void> started;
  ASSERT_TRUE(executor
                  .Submit("", RunOnly([&] {
                            started.set_value();
                            gate.Wait();
                          }))
                  .ok());
  started.get_future().wait();  // running: no longer queued
  ASSERT_TRUE(executor.Submit("", RunOnly([] {})).ok());
  ASSERT_TRUE(executor.Submit("k", RunOnly([] {})).ok());
  const absl::Status refused = executor.Submit("", RunOnly([] {}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "server overloaded: 2 calls queued; the limit is 2");
  gate.Open();
  EXPECT_TRUE(executor.WaitIdle(steady_clock::now() + std::chrono::minutes(5)));
}

// One key's tasks beyond the cap wait without a worker, so a keyless task
// (and another key's) runs while the key's first task is blocked.
TEST(Executor, KeyCapLeavesWorkersForOthers) {
  Executor executor({.threads = 2, .max_queued = 100, .max_running_per_key = 1});
  Gate gate;
  std::promise<void> first_started;
  Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string what) {
    MutexLock lock(&mu);
    order.push_back(std::move(what));
  };
  ASSERT_TRUE(executor
                  .Submit("a", RunOnly([&] {
                            first_started.set_value();
                            gate.Wait();
                            record("a1");
                          }))
                  .ok());
  first_started.get_future().wait();
  for (int i = 2; i <= 4; ++i) {
    ASSERT_TRUE(executor.Submit("a", RunOnly([&, i] { record("a" + std::to_string(i)); })).ok());
  }
  std::promise<void> b_done, free_done;
  ASSERT_TRUE(executor
                  .Submit("b", RunOnly([&] {
                            record("b");
                            b_done.set_value();
                          }))
                  .ok());
  ASSERT_TRUE(executor
                  .Submit("", RunOnly([&] {
                            record("keyless");
                            free_done.set_value();
                          }))
                  .ok());
  // Both complete while a1 still blocks a worker and a2..a4 wait.
  b_done.get_future().wait();
  free_done.get_future().wait();
  EXPECT_EQ(executor.queued(), 3u);
  gate.Open();
  ASSERT_TRUE(executor.WaitIdle(steady_clock::now() + std::chrono::minutes(5)));
  MutexLock lock(&mu);
  ASSERT_EQ(order.size(), 6u);
  // The key's tasks run one at a time, in order.
  std::vector<std::string> a;
  for (const std::string& s : order) {
    if (s[0] == 'a') a.push_back(s);
  }
  EXPECT_EQ(a, (std::vector<std::string>{"a1", "a2", "a3", "a4"}));
}

// A key is light while every task of it queued or running is light, and
// never once the executor is closed.
TEST(Executor, KeyIsLightWhileOnlyLightTasksOfItAreQueuedOrRunning) {
  Executor executor({.threads = 1, .max_queued = 100, .max_running_per_key = 1});
  EXPECT_TRUE(executor.KeyIsLight("m"));
  Gate light_gate;
  std::promise<void> light_started;
  Executor::Task light = RunOnly([&] {
    light_started.set_value();
    light_gate.Wait();
  });
  light.light = true;
  ASSERT_TRUE(executor.Submit("m", std::move(light)).ok());
  light_started.get_future().wait();
  EXPECT_TRUE(executor.KeyIsLight("m"));
  // A heavy task waiting behind the light one (the key's cap is 1) makes
  // the key heavy, and so does one of it running.
  Gate heavy_gate;
  std::promise<void> heavy_started;
  ASSERT_TRUE(executor
                  .Submit("m", RunOnly([&] {
                            heavy_started.set_value();
                            heavy_gate.Wait();
                          }))
                  .ok());
  EXPECT_FALSE(executor.KeyIsLight("m"));
  EXPECT_TRUE(executor.KeyIsLight("other"));
  light_gate.Open();
  heavy_started.get_future().wait();
  EXPECT_FALSE(executor.KeyIsLight("m"));
  heavy_gate.Open();
  ASSERT_TRUE(executor.WaitIdle(steady_clock::now() + std::chrono::minutes(5)));
  EXPECT_TRUE(executor.KeyIsLight("m"));
  executor.Close(absl::UnavailableError("shutting down"));
  EXPECT_FALSE(executor.KeyIsLight("m"));
}

TEST(Executor, CloseCancelsQueuedTasksAndRefusesLater) {
  Executor executor({.threads = 1, .max_queued = 100, .max_running_per_key = 1});
  Gate gate;
  std::promise<void> started;
  std::atomic<bool> blocked_ran{false};
  ASSERT_TRUE(executor
                  .Submit("", RunOnly([&] {
                            started.set_value();
                            gate.Wait();
                            blocked_ran = true;
                          }))
                  .ok());
  started.get_future().wait();
  std::atomic<int> ran{0};
  std::vector<absl::Status> cancelled;
  Mutex mu;
  for (const char* key : {"", "m", "m"}) {
    ASSERT_TRUE(executor
                    .Submit(key, {[&] { ++ran; },
                                  [&](const absl::Status& s) {
                                    MutexLock lock(&mu);
                                    cancelled.push_back(s);
                                  }})
                    .ok());
  }
  EXPECT_FALSE(executor.WaitIdle(steady_clock::now()));
  executor.Close(absl::UnavailableError("shutting down"));
  {
    MutexLock lock(&mu);
    ASSERT_EQ(cancelled.size(), 3u);
    for (const absl::Status& s : cancelled) EXPECT_EQ(s, absl::UnavailableError("shutting down"));
  }
  EXPECT_EQ(executor.Submit("", RunOnly([&] { ++ran; })).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(executor.running(), 1u);  // the running task goes on
  gate.Open();
  EXPECT_TRUE(executor.WaitIdle(steady_clock::now() + std::chrono::minutes(5)));
  EXPECT_TRUE(blocked_ran);
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace clickd
