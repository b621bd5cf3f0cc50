#include "server/flag_checks.h"

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(FlagChecks, RangesNameTheFlagAndTheBounds) {
  EXPECT_TRUE(CheckFlagRange("threads", int64_t{0}, 0, 1024).ok());
  EXPECT_TRUE(CheckFlagRange("threads", int64_t{1024}, 0, 1024).ok());
  const absl::Status s = CheckFlagRange("threads", int64_t{-5}, 0, 1024);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--threads=-5 must be in [0, 1024]");
}

// An unsigned flag beyond INT64_MAX is named as given, not as a negative.
TEST(FlagChecks, UnsignedRangesNameTheValueAsGiven) {
  EXPECT_TRUE(CheckFlagRange("max_models", uint64_t{1}, 1, 100'000).ok());
  EXPECT_EQ(CheckFlagRange("max_models", uint64_t{0}, 1, 100'000).message(),
            "--max_models=0 must be in [1, 100000]");
  EXPECT_EQ(CheckFlagRange("max_models", ~uint64_t{0}, 1, 100'000).message(),
            "--max_models=18446744073709551615 must be in [1, 100000]");
}

}  // namespace
}  // namespace clickd
