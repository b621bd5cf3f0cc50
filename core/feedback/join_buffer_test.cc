#include "core/feedback/join_buffer.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/base/crc32c.h"
#include "core/feedback/delayed_feedback.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr int64_t kTtl = 1000;
constexpr uint16_t kTag = 0x2a;

JoinBuffer::Options TestOptions(uint64_t max_bytes = 1 << 20) {
  return {.ttl_us = kTtl, .max_bytes = max_bytes, .model_tag = kTag};
}

std::vector<HashedFeature> Features(uint64_t seed, int n) {
  std::vector<HashedFeature> features;
  for (int i = 0; i < n; ++i) features.push_back({seed * 1000 + i, 0.5f * (i + 1)});
  return features;
}

// A per-incarnation tag (issue 33, N7) takes the top 24 bits; ids of the
// 16-bit layout, or of another 24-bit tag, are another model's, and the
// snapshot round-trips with the same ids.
TEST(JoinBufferTest, TwentyFourBitTagsTakeTheTopBits) {
  JoinBuffer::Options options = TestOptions();
  options.model_tag = 0xabcdef;
  options.tag_bits = 24;
  JoinBuffer buffer(options);
  const auto a = Features(1, 3);
  const ImpressionExample examples[] = {{a, {}}, {a, {}}};
  auto first = buffer.Add(100, examples);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, uint64_t{0xabcdef} << 40);
  Impression joined;
  EXPECT_EQ(buffer.Label((uint64_t{0xabcd} << 48) | 0, 150, &joined), JoinOutcome::kOtherModel);
  EXPECT_EQ(buffer.Label((uint64_t{0xabcdee} << 40) | 0, 150, &joined), JoinOutcome::kOtherModel);
  EXPECT_EQ(buffer.Label(*first + 5, 150, &joined), JoinOutcome::kUnknown);
  auto decoded = JoinBuffer::Decode(options, buffer.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Label(*first + 1, 150, &joined), JoinOutcome::kJoined);
}

TEST(JoinBufferTest, IssuesDenseTaggedIdsAndJoinsALabelOnce) {
  JoinBuffer buffer(TestOptions());
  const auto a = Features(1, 3), b = Features(2, 5);
  const std::vector<float> dense = {1.5f, -2.0f};
  const ImpressionExample examples[] = {{a, {}}, {b, dense}};
  auto first = buffer.Add(100, examples);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first >> 48, kTag);
  EXPECT_EQ(buffer.Stats().next_id, *first + 2);
  EXPECT_EQ(buffer.Stats().pending, 2u);

  Impression joined;
  ASSERT_EQ(buffer.Label(*first + 1, 150, &joined), JoinOutcome::kJoined);
  EXPECT_EQ(joined.id, *first + 1);
  EXPECT_EQ(joined.logged_at_us, 100);
  EXPECT_EQ(joined.features, b);
  EXPECT_EQ(joined.dense, dense);
  EXPECT_EQ(buffer.Label(*first + 1, 160, &joined), JoinOutcome::kAlreadyLabelled);
  EXPECT_EQ(buffer.Label(*first + 2, 160, &joined), JoinOutcome::kUnknown);
  EXPECT_EQ(buffer.Label(*first ^ (uint64_t{1} << 50), 160, &joined), JoinOutcome::kOtherModel);
  const JoinBufferStats stats = buffer.Stats();
  EXPECT_EQ(stats.pending, 1u);
  EXPECT_EQ(stats.labelled, 1u);
}

TEST(JoinBufferTest, ExpiresUnlabelledImpressionsInOrderAtTheirTtl) {
  JoinBuffer buffer(TestOptions());
  const auto a = Features(1, 2), b = Features(2, 2), c = Features(3, 2);
  const ImpressionExample first_two[] = {{a, {}}, {b, {}}};
  const ImpressionExample third[] = {{c, {}}};
  const uint64_t id = *buffer.Add(0, first_two);
  ASSERT_TRUE(buffer.Add(500, third).ok());
  Impression joined;
  ASSERT_EQ(buffer.Label(id, 10, &joined), JoinOutcome::kJoined);

  std::vector<uint64_t> expired;
  const auto collect = [&](const Impression& i) { expired.push_back(i.id); };
  buffer.Expire(kTtl - 1, collect);
  EXPECT_TRUE(expired.empty());
  // Past its TTL an impression cannot be labelled, even before Expire runs.
  EXPECT_EQ(buffer.Label(id + 1, kTtl, &joined), JoinOutcome::kExpired);
  buffer.Expire(kTtl, collect);
  EXPECT_EQ(expired, std::vector<uint64_t>{id + 1});  // id was labelled: only forgotten
  EXPECT_EQ(buffer.Label(id, kTtl, &joined), JoinOutcome::kExpired);
  EXPECT_EQ(buffer.Stats().pending, 1u);
  buffer.Expire(500 + kTtl, collect);
  EXPECT_EQ(expired, (std::vector<uint64_t>{id + 1, id + 2}));
  EXPECT_EQ(buffer.Stats().bytes, 0u);
  EXPECT_EQ(buffer.Stats().next_id, id + 3);
}

TEST(JoinBufferTest, TimeThatGoesBackwardsIsTheLatestSeen) {
  JoinBuffer buffer(TestOptions());
  const auto a = Features(1, 1);
  const ImpressionExample one[] = {{a, {}}};
  ASSERT_TRUE(buffer.Add(5000, one).ok());
  const uint64_t id = *buffer.Add(10, one);  // logged at 5000, not 10
  Impression joined;
  ASSERT_EQ(buffer.Label(id, 20, &joined), JoinOutcome::kJoined);
  EXPECT_EQ(joined.logged_at_us, 5000);
}

TEST(JoinBufferTest, BudgetRefusesAWholeBatchAndNamesTheLimit) {
  const uint64_t one = JoinBuffer::ImpressionBytes(4, 0);
  JoinBuffer buffer(TestOptions(3 * one));
  const auto f = Features(1, 4);
  const ImpressionExample two[] = {{f, {}}, {f, {}}};
  ASSERT_TRUE(buffer.Add(0, two).ok());
  const uint64_t next = buffer.Stats().next_id;
  auto refused = buffer.Add(1, two);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "max_buffer_bytes"))
      << refused.status();
  EXPECT_EQ(buffer.Stats().next_id, next);  // nothing added, no id spent
  EXPECT_EQ(buffer.Stats().bytes, 2 * one);

  // A label frees the features; expiry frees the rest.
  Impression joined;
  ASSERT_EQ(buffer.Label(next - 1, 2, &joined), JoinOutcome::kJoined);
  EXPECT_EQ(buffer.Stats().bytes, one + JoinBuffer::ImpressionBytes(0, 0));
  const ImpressionExample one_more[] = {{f, {}}};
  EXPECT_TRUE(buffer.Add(3, one_more).ok());
  EXPECT_EQ(buffer.Add(3, one_more).status().code(), absl::StatusCode::kResourceExhausted);
  buffer.Expire(3 + kTtl, [](const Impression&) {});
  EXPECT_EQ(buffer.Stats().bytes, 0u);
}

TEST(JoinBufferTest, BytesStayWithinTheBudgetUnderRandomLoad) {
  const uint64_t budget = 50 * JoinBuffer::ImpressionBytes(10, 0);
  JoinBuffer buffer(TestOptions(budget));
  std::mt19937_64 rng(7);
  int64_t now = 0;
  uint64_t added = 0, refused = 0, expired = 0;
  for (int step = 0; step < 20000; ++step) {
    now += rng() % 20;
    const int kind = rng() % 10;
    if (kind < 6) {
      const auto f = Features(step, 1 + rng() % 20);
      const ImpressionExample batch[] = {{f, {}}, {f, {}}};
      if (buffer.Add(now, batch).ok()) {
        added += 2;
      } else {
        ++refused;
      }
    } else if (kind < 9) {
      Impression joined;
      const uint64_t next = buffer.Stats().next_id;
      buffer.Label(next - 1 - rng() % 40, now, &joined);
    } else {
      buffer.Expire(now, [&](const Impression&) { ++expired; });
    }
    ASSERT_LE(buffer.Stats().bytes, budget) << "step " << step;
  }
  EXPECT_GT(added, 1000u);
  EXPECT_GT(refused, 0u);
  EXPECT_GT(expired, 0u);
}

TEST(JoinBufferTest, EncodeDecodeKeepsEverything) {
  JoinBuffer buffer(TestOptions());
  const auto a = Features(1, 3), b = Features(2, 1);
  const std::vector<float> dense = {0.25f};
  const ImpressionExample batch[] = {{a, {}}, {b, dense}, {a, dense}};
  const uint64_t id = *buffer.Add(40, batch);
  Impression joined;
  ASSERT_EQ(buffer.Label(id + 2, 50, &joined), JoinOutcome::kJoined);
  buffer.Expire(60, [](const Impression&) {});

  const std::string bytes = buffer.Encode();
  auto decoded = JoinBuffer::Decode(TestOptions(), bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Encode(), bytes);
  const JoinBufferStats before = buffer.Stats(), after = (*decoded)->Stats();
  EXPECT_EQ(after.pending, before.pending);
  EXPECT_EQ(after.labelled, before.labelled);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.next_id, before.next_id);
  EXPECT_EQ((*decoded)->Label(id + 2, 70, &joined), JoinOutcome::kAlreadyLabelled);
  ASSERT_EQ((*decoded)->Label(id + 1, 70, &joined), JoinOutcome::kJoined);
  EXPECT_EQ(joined.features, b);
  EXPECT_EQ(joined.dense, dense);
  EXPECT_EQ(joined.logged_at_us, 40);
}

TEST(JoinBufferTest, DecodeRefusesEveryFlipAndCut) {
  JoinBuffer buffer(TestOptions());
  const auto a = Features(1, 2);
  const ImpressionExample batch[] = {{a, {}}, {a, {}}};
  ASSERT_TRUE(buffer.Add(1, batch).ok());
  const std::string bytes = buffer.Encode();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] ^= 0x10;
    EXPECT_EQ(JoinBuffer::Decode(TestOptions(), flipped).status().code(),
              absl::StatusCode::kDataLoss)
        << "byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(JoinBuffer::Decode(TestOptions(), bytes.substr(0, n)).ok()) << "length " << n;
  }
}

// The weights make the biased stream's expected loss the unbiased one: for
// any p, E_b[w(y) 1{y=1}] = p and E_b[w(y) 1{y=0}] = 1 - p.
TEST(DelayedFeedbackTest, FnwWeightsUndoTheFakeNegativeBias) {
  for (double p : {0.0, 0.001, 0.03, 0.5, 0.9, 1.0}) {
    const double b1 = p / (1 + p), b0 = 1 / (1 + p);
    EXPECT_NEAR(b1 * FnwPositiveWeight(p), p, 1e-15) << p;
    EXPECT_NEAR(b0 * FnwNegativeWeight(p), 1 - p, 1e-15) << p;
  }
  EXPECT_EQ(FnwNegativeWeight(1.5), 0.0);
  EXPECT_EQ(FnwPositiveWeight(-1.0), 1.0);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

// The 2^48 - 1 ids of a model run out: CheckAdd says so before a record is
// logged, and Add refuses the same, so a logged record always applies.
TEST(JoinBufferTest, IdsRunningOutAreRefusedByCheckAddAndAdd) {
  // A buffer whose next counter is the last one: header fields patched, CRC
  // resealed (the only way to get there without 2^48 impressions).
  std::string bytes = JoinBuffer(TestOptions()).Encode();
  bytes.resize(bytes.size() - 4);                 // the CRC
  const uint64_t last = (uint64_t{1} << 48) - 2;  // the last counter issued
  for (int i = 0; i < 8; ++i) bytes[4 + 8 + i] = static_cast<char>(last >> (8 * i));
  crc32c::Seal(&bytes);
  auto buffer = JoinBuffer::Decode(TestOptions(), bytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  const auto f = Features(1, 2);
  const ImpressionExample one[] = {{f, {}}};
  const ImpressionExample two[] = {{f, {}}, {f, {}}};
  EXPECT_TRUE((*buffer)->CheckAdd(0, one).ok());
  const absl::Status refused = (*buffer)->CheckAdd(0, two);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(refused.message(), "ids exhausted")) << refused;
  EXPECT_EQ((*buffer)->Add(0, two).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*buffer)->Add(0, one).ok());
  const ImpressionExample nan[] = {{f, {}, NAN}};
  EXPECT_EQ(JoinBuffer(TestOptions()).CheckAdd(0, nan).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace clickd
