#include "core/base/background_thread.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
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

TEST(BackgroundThread, DestroyedIdleOrUnused) {
  { BackgroundThread unused; }
  BackgroundThread used;
  used.Run([] {});
}

}  // namespace
}  // namespace clickd
