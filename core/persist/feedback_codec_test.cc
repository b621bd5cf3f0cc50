#include "core/persist/feedback_codec.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/persist/batch_codec.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

ImpressionsRecord SomeImpressions() {
  ImpressionsRecord record;
  record.time_us = 1'700'000'000'000'000;
  record.first_id = (uint64_t{7} << 48) | 12;
  record.impressions.push_back({0.5f, {{1, 1.0f}, {99, -0.5f}}, {}});
  record.impressions.push_back({-2.25f, {{5, 2.0f}}, {0.25f, -3.0f}});
  return record;
}

FeedbackRecord SomeFeedback() {
  FeedbackRecord record;
  record.time_us = 1'700'000'000'500'000;
  record.items.push_back({(uint64_t{7} << 48) | 12, 1.0f, 1.0f, 1'700'000'000'400'000});
  record.items.push_back({(uint64_t{7} << 48) | 13, 0.0f, 2.5f, 0});
  return record;
}

TEST(FeedbackCodecTest, ImpressionsRoundTrip) {
  const ImpressionsRecord record = SomeImpressions();
  std::string bytes;
  EncodeImpressions(record, &bytes);
  EXPECT_EQ(ClassifyPayload(bytes), PayloadKind::kImpressions);
  auto decoded = DecodeImpressions(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->time_us, record.time_us);
  EXPECT_EQ(decoded->first_id, record.first_id);
  ASSERT_EQ(decoded->impressions.size(), 2u);
  EXPECT_EQ(decoded->impressions[0].features, record.impressions[0].features);
  EXPECT_EQ(decoded->impressions[1].dense, record.impressions[1].dense);
  EXPECT_EQ(decoded->impressions[1].margin, -2.25f);
}

// A feedback record without items is a tick of the loop's clock.
TEST(FeedbackCodecTest, TickRoundTrip) {
  FeedbackRecord tick;
  tick.time_us = 42;
  std::string bytes;
  EncodeFeedback(tick, &bytes);
  auto decoded = DecodeFeedback(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->time_us, 42);
  EXPECT_TRUE(decoded->items.empty());
}

TEST(FeedbackCodecTest, FeedbackRoundTrip) {
  const FeedbackRecord record = SomeFeedback();
  std::string bytes;
  EncodeFeedback(record, &bytes);
  EXPECT_EQ(ClassifyPayload(bytes), PayloadKind::kFeedback);
  auto decoded = DecodeFeedback(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->time_us, record.time_us);
  ASSERT_EQ(decoded->items.size(), 2u);
  EXPECT_EQ(decoded->items[1].impression_id, record.items[1].impression_id);
  EXPECT_EQ(decoded->items[1].importance, 2.5f);
  EXPECT_EQ(decoded->items[0].event_time_us, record.items[0].event_time_us);
}

// A reader of batches refuses the new payloads as damage (its group count
// would be the tag, above its limit), and batches classify as batches.
TEST(FeedbackCodecTest, BatchesAndTheNewPayloadsNeverPassForEachOther) {
  std::string impressions, feedback;
  EncodeImpressions(SomeImpressions(), &impressions);
  EncodeFeedback(SomeFeedback(), &feedback);
  EXPECT_EQ(DecodeBatch(impressions).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeBatch(feedback).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeFeedback(impressions).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeImpressions(feedback).status().code(), absl::StatusCode::kDataLoss);

  Example example;
  example.namespaces.push_back({"a", {}});
  const TrainingExample batch[] = {{nullptr, &example, 1.0f, 1.0f}};
  std::string batch_bytes;
  EncodeBatch(batch, &batch_bytes);
  EXPECT_EQ(ClassifyPayload(batch_bytes), PayloadKind::kBatch);
  EXPECT_EQ(ClassifyPayload(""), PayloadKind::kBatch);
}

TEST(FeedbackCodecTest, EveryCutAndImpossibleValueIsDamage) {
  std::string impressions, feedback;
  EncodeImpressions(SomeImpressions(), &impressions);
  EncodeFeedback(SomeFeedback(), &feedback);
  for (size_t n = 0; n < impressions.size(); ++n) {
    EXPECT_FALSE(DecodeImpressions(impressions.substr(0, n)).ok()) << n;
  }
  for (size_t n = 0; n < feedback.size(); ++n) {
    EXPECT_FALSE(DecodeFeedback(feedback.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeImpressions(impressions + "x").ok());
  EXPECT_FALSE(DecodeFeedback(feedback + "x").ok());

  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    ImpressionsRecord record = SomeImpressions();
    record.impressions[1].dense[0] = bad;
    std::string bytes;
    EncodeImpressions(record, &bytes);
    EXPECT_EQ(DecodeImpressions(bytes).status().code(), absl::StatusCode::kDataLoss);
    record = SomeImpressions();
    record.impressions[0].margin = bad;
    bytes.clear();
    EncodeImpressions(record, &bytes);
    EXPECT_EQ(DecodeImpressions(bytes).status().code(), absl::StatusCode::kDataLoss);
    FeedbackRecord items = SomeFeedback();
    items.items[0].label = bad;
    bytes.clear();
    EncodeFeedback(items, &bytes);
    EXPECT_EQ(DecodeFeedback(bytes).status().code(), absl::StatusCode::kDataLoss);
  }
  FeedbackRecord negative = SomeFeedback();
  negative.items[0].importance = -1;
  std::string bytes;
  EncodeFeedback(negative, &bytes);
  EXPECT_FALSE(DecodeFeedback(bytes).ok());
  ImpressionsRecord empty = SomeImpressions();
  empty.impressions.clear();
  bytes.clear();
  EncodeImpressions(empty, &bytes);
  EXPECT_FALSE(DecodeImpressions(bytes).ok());
}

}  // namespace
}  // namespace clickd
