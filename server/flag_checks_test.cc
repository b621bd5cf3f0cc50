#include "server/flag_checks.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(FlagChecks, RangesNameTheFlagAndTheBounds) {
  EXPECT_TRUE(CheckFlagRange("threads", 0, 0, 1024).ok());
  EXPECT_TRUE(CheckFlagRange("threads", 1024, 0, 1024).ok());
  const absl::Status s = CheckFlagRange("threads", -5, 0, 1024);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--threads=-5 must be in [0, 1024]");
}

}  // namespace
}  // namespace clickd
