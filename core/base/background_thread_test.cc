#include "core/base/background_thread.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(BackgroundThread, RunsOnItsOwnThreadAndReturnsWhenDone) {
  BackgroundThread background(/*nice_increment=*/0);
  std::thread::id ran_on;
  int value = 0;
  background.Run([&] {
    ran_on = std::this_thread::get_id();
    value = 42;
  });
  // Run returned, so the closure's writes are visible here.
  EXPECT_EQ(value, 42);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(BackgroundThread, LowersOnlyItsOwnPriority) {
  const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  BackgroundThread background(/*nice_increment=*/10);
  int inside = 0;
  background.Run([&] { inside = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); });
  if (background.lowered()) {
    EXPECT_EQ(inside, std::min(before + 10, 19));
  } else {
    EXPECT_EQ(inside, before);  // refused: it runs at the caller's priority
  }
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), before);
}

TEST(BackgroundThread, ServesConcurrentCallersOneAtATime) {
  BackgroundThread background(/*nice_increment=*/0);
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> ran{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        background.Run([&] {
          if (running.fetch_add(1) != 0) overlaps.fetch_add(1);
          ran.fetch_add(1);
          running.fetch_sub(1);
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(ran.load(), 200);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(BackgroundThread, RunsOneCallersClosuresInTheOrderOfItsCalls) {
  BackgroundThread background(/*nice_increment=*/0);
  std::vector<int> ran;
  for (int i = 0; i < 100; ++i) background.Run([&ran, i] { ran.push_back(i); });
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[static_cast<size_t>(i)], i);
}

// The closure lives on the caller's stack: Run must not return before the
// closure has (a caller that went on would free what the closure uses).
TEST(BackgroundThread, TheCallerWaitsUntilTheClosureReturns) {
  BackgroundThread background(/*nice_increment=*/0);
  for (int i = 0; i < 20; ++i) {
    bool finished = false;
    background.Run([&finished] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      finished = true;
    });
    EXPECT_TRUE(finished);
  }
}

// Set when the background thread exits: a thread_local's destructor runs
// as its thread ends, so after a join it has run, after a detach maybe not.
std::atomic<bool> background_thread_exited{false};
struct MarksItsThreadsExit {
  ~MarksItsThreadsExit() { background_thread_exited = true; }
};

TEST(BackgroundThread, TheDestructorJoinsTheThread) {
  background_thread_exited = false;
  {
    BackgroundThread background(/*nice_increment=*/0);
    background.Run([] {
      thread_local MarksItsThreadsExit marker;
      (void)marker;
    });
    EXPECT_FALSE(background_thread_exited);
  }
  EXPECT_TRUE(background_thread_exited);
}

TEST(BackgroundThread, DestroyedIdleOrUnused) {
  { BackgroundThread unused; }
  BackgroundThread used;
  used.Run([] {});
}

}  // namespace
}  // namespace clickd
