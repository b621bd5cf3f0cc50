#include "core/persist/idempotency_window.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr int64_t kSecond = 1'000'000;

IdempotencyOptions Options(int64_t window_seconds, size_t max_keys) {
  return {.window_us = window_seconds * kSecond, .max_keys = max_keys};
}

TEST(IdempotencyWindow, HoldsAKeyForItsWindowFromItsFirstTime) {
  IdempotencyWindow window(Options(10, 100));
  EXPECT_FALSE(window.Contains("a", 0));
  window.Insert("a", 0);
  EXPECT_TRUE(window.Contains("a", 9 * kSecond));
  window.Insert("a", 5 * kSecond);  // a retry does not extend it
  EXPECT_FALSE(window.Contains("a", 10 * kSecond));
  EXPECT_FALSE(window.Contains("b", 1));
  window.Insert("b", 11 * kSecond);  // forgets "a"
  EXPECT_EQ(window.size(), 1u);
  // Learned again after its window: held anew.
  window.Insert("a", 12 * kSecond);
  EXPECT_TRUE(window.Contains("a", 13 * kSecond));
}

TEST(IdempotencyWindow, BeyondMaxKeysTheOldestGoesFirst) {
  IdempotencyWindow window(Options(3600, 3));
  for (int i = 0; i < 5; ++i) window.Insert(absl::StrCat("k", i), i);
  EXPECT_EQ(window.size(), 3u);
  EXPECT_FALSE(window.Contains("k0", 10));
  EXPECT_FALSE(window.Contains("k1", 10));
  EXPECT_TRUE(window.Contains("k2", 10));
  EXPECT_TRUE(window.Contains("k4", 10));
}

TEST(IdempotencyWindow, TimeThatGoesBackwardsIsTheLatestSeen) {
  IdempotencyWindow window(Options(10, 100));
  window.Insert("late", 100 * kSecond);
  window.Insert("early", 1);  // counted at 100 s
  EXPECT_TRUE(window.Contains("early", 105 * kSecond));
}

TEST(IdempotencyWindow, EncodeDecodeKeepsEveryKeyAndRefusesDamage) {
  IdempotencyWindow window(Options(60, 100));
  for (int i = 0; i < 20; ++i) window.Insert(absl::StrCat("key-", i), i * kSecond);
  const std::string bytes = window.Encode();
  auto decoded = IdempotencyWindow::Decode(Options(60, 100), bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Encode(), bytes);
  EXPECT_TRUE((*decoded)->Contains("key-7", 30 * kSecond));
  // Fewer keys allowed now: the oldest are forgotten on load.
  auto fewer = IdempotencyWindow::Decode(Options(60, 5), bytes);
  ASSERT_TRUE(fewer.ok());
  EXPECT_EQ((*fewer)->size(), 5u);
  EXPECT_FALSE((*fewer)->Contains("key-14", 30 * kSecond));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x20;
    EXPECT_EQ(IdempotencyWindow::Decode(Options(60, 100), flipped).status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(IdempotencyWindow::Decode(Options(60, 100), bytes.substr(0, n)).ok()) << n;
  }
}

TEST(IdempotencyWindow, SourcePositionsAreNeverForgottenAndSurviveEncoding) {
  IdempotencyWindow window(IdempotencyOptions{.window_us = 10, .max_keys = 2});
  EXPECT_EQ(window.Position("clicks", 0), -1);
  window.Insert(IdempotencyWindow::PositionKey("clicks", 0, 100), 1);
  window.Insert(IdempotencyWindow::PositionKey("clicks", 1, 7), 2);
  window.Insert(IdempotencyWindow::PositionKey("clicks", 0, 250), 3);
  // Many keys, long after: the positions stay.
  for (int i = 0; i < 10; ++i) window.Insert("key" + std::to_string(i), 1000 + i);
  EXPECT_EQ(window.Position("clicks", 0), 250);
  EXPECT_EQ(window.Position("clicks", 1), 7);
  EXPECT_EQ(window.Position("other", 0), -1);
  // A position key is never a duplicate.
  EXPECT_FALSE(window.Contains(IdempotencyWindow::PositionKey("clicks", 0, 250), 1010));
  auto decoded = IdempotencyWindow::Decode(IdempotencyOptions{}, window.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Position("clicks", 0), 250);
  EXPECT_EQ((*decoded)->Position("clicks", 1), 7);
  EXPECT_EQ((*decoded)->Encode(), window.Encode());
  // No RPC key can forge one: they hold only printable ASCII, and the
  // prefix starts with 0x1f.
  EXPECT_EQ(IdempotencyWindow::PositionKey("t", 0, 1)[0], '\x1f');
}

// A Kafka feedback topic's labels travel under their partition's position
// key: in the Feedback key space it stays a position (kafka/kafka_source.h).
TEST(IdempotencyWindow, APositionKeyStaysAPositionAsAFeedbackKey) {
  IdempotencyWindow window(IdempotencyOptions{});
  const std::string key = IdempotencyWindow::PositionKey("labels", 2, 40);
  EXPECT_EQ(IdempotencyWindow::FeedbackKey(key), key);
  window.Insert(IdempotencyWindow::FeedbackKey(key), 1);
  EXPECT_EQ(window.Position("labels", 2), 40);
  // An RPC's key still gets the space of its own.
  EXPECT_NE(IdempotencyWindow::FeedbackKey("k1"), "k1");
}

}  // namespace
}  // namespace clickd
