#include "kafka/kafka_record.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ParseKafkaRecord, VwLineIsOneExample) {
  auto r = ParseKafkaRecord(KafkaFormat::kVw, "1 |user u1 |ad a2:0.5\n", Limits{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->examples_size(), 1);
  EXPECT_EQ(r->examples(0).label(), 1.0f);
  EXPECT_EQ(r->examples(0).example().namespaces_size(), 2);
}

TEST(ParseKafkaRecord, VwRecordWithTwoLinesIsRefused) {
  auto r = ParseKafkaRecord(KafkaFormat::kVw, "1 |a x\n0 |a y\n", Limits{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseKafkaRecord, JsonAndProtoReadAnUpdateRequest) {
  auto j = ParseKafkaRecord(
      KafkaFormat::kJson,
      R"({"examples":[{"label":1,"example":{"namespaces":[{"name":"u","features":[{"name":"x"}]}]}}]})",
      Limits{});
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->examples_size(), 1);
  auto p = ParseKafkaRecord(KafkaFormat::kProto, j->SerializeAsString(), Limits{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->SerializeAsString(), j->SerializeAsString());
  EXPECT_FALSE(ParseKafkaRecord(KafkaFormat::kJson, "{not json", Limits{}).ok());
  EXPECT_FALSE(ParseKafkaRecord(KafkaFormat::kProto, "\xff\xff\xff", Limits{}).ok());
}

TEST(ParseKafkaRecord, RecordOverTheMessageLimitIsRefusedNamingTheLimit) {
  Limits limits;
  limits.max_message_bytes = 100;
  auto r = ParseKafkaRecord(KafkaFormat::kVw, std::string(101, 'a'), limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(),
            "the record has 101 bytes; the limit is 100 (--max_message_bytes)");
}

TEST(ParseKafkaFeedbackRecord, JsonAndProtoReadAFeedbackRequestAndVwIsRefused) {
  auto j = ParseKafkaFeedbackRecord(KafkaFormat::kJson,
                                    R"({"items":[{"impressionId":"12345","label":1}]})", Limits{});
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_EQ(j->items_size(), 1);
  EXPECT_EQ(j->items(0).impression_id(), 12345u);
  auto p = ParseKafkaFeedbackRecord(KafkaFormat::kProto, j->SerializeAsString(), Limits{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->SerializeAsString(), j->SerializeAsString());
  auto bad = ParseKafkaFeedbackRecord(KafkaFormat::kJson, R"({"items":[{"label":"x"}]})", Limits{});
  EXPECT_NE(bad.status().message().find("not a clickd.v1.FeedbackRequest in JSON"),
            std::string::npos)
      << bad.status();
  EXPECT_FALSE(ParseKafkaFeedbackRecord(KafkaFormat::kVw, "1 |a x", Limits{}).ok());
  Limits limits;
  limits.max_message_bytes = 10;
  EXPECT_EQ(
      ParseKafkaFeedbackRecord(KafkaFormat::kJson, std::string(11, ' '), limits).status().code(),
      absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace clickd
