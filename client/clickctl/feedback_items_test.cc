#include "client/clickctl/feedback_items.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ParseFeedbackLine, ReadsIdLabelAndImportance) {
  auto item = ParseFeedbackLine("18446744073709551615 1 2.5", "line 1");
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->impression_id(), 18446744073709551615ull);  // beyond a double's 2^53
  EXPECT_EQ(item->label(), 1.0f);
  EXPECT_EQ(item->importance(), 2.5f);
  item = ParseFeedbackLine("\t42  0\r", "line 2");
  ASSERT_TRUE(item.ok()) << item.status();
  EXPECT_EQ(item->impression_id(), 42u);
  EXPECT_EQ(item->label(), 0.0f);
  EXPECT_FALSE(item->has_importance());
}

TEST(ParseFeedbackLine, ErrorsNameTheLineAndTheField) {
  const auto message = [](absl::string_view line) {
    return std::string(ParseFeedbackLine(line, "f:3").status().message());
  };
  EXPECT_EQ(message("42"), "f:3: expected \"impression_id label [importance]\", got 1 fields");
  EXPECT_EQ(message("1 1 1 1"), "f:3: expected \"impression_id label [importance]\", got 4 fields");
  EXPECT_EQ(message("-1 1"), "f:3: impression_id \"-1\" is not a decimal uint64");
  EXPECT_EQ(message("0x2a 1"), "f:3: impression_id \"0x2a\" is not a decimal uint64");
  EXPECT_EQ(message("42 yes"), "f:3: label \"yes\" is not a number");
  EXPECT_NE(message("42 0.5").find("f:3: label"), std::string::npos) << message("42 0.5");
  EXPECT_EQ(message("42 1 -2").rfind("f:3: importance is -2; must be finite and in [0, ", 0), 0u)
      << message("42 1 -2");
  EXPECT_EQ(message("42 1 w"), "f:3: importance \"w\" is not a number");
}

TEST(FeedbackTally, CountsEveryStatusAndPrintsZeros) {
  FeedbackTally tally;
  EXPECT_EQ(tally.Json(),
            R"({"JOINED":0,"UNKNOWN":0,"EXPIRED":0,"ALREADY_LABELLED":0,"OTHER_MODEL":0})");
  v1::FeedbackResponse response;
  response.add_statuses(v1::FEEDBACK_JOINED);
  response.add_statuses(v1::FEEDBACK_JOINED);
  response.add_statuses(v1::FEEDBACK_ALREADY_LABELLED);
  tally.Add(response);
  response.clear_statuses();
  response.add_statuses(v1::FEEDBACK_OTHER_MODEL);
  tally.Add(response);
  EXPECT_EQ(tally.items(), 4u);
  EXPECT_EQ(tally.count(v1::FEEDBACK_JOINED), 2u);
  EXPECT_EQ(tally.Json(),
            R"({"JOINED":2,"UNKNOWN":0,"EXPIRED":0,"ALREADY_LABELLED":1,"OTHER_MODEL":1})");
  EXPECT_EQ(tally.Text(), "JOINED 2, UNKNOWN 0, EXPIRED 0, ALREADY_LABELLED 1, OTHER_MODEL 1");
  EXPECT_EQ(FeedbackStatusName(v1::FEEDBACK_EXPIRED), "EXPIRED");
}

}  // namespace
}  // namespace clickd
