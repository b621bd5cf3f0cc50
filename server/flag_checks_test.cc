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

TEST(FlagChecks, ListenAddresses) {
  for (const char* good : {"127.0.0.1:50051", "0.0.0.0:0", "[::1]:50051", "[::]:8080",
                           "localhost:65535", "unix:/tmp/clickd.sock"}) {
    EXPECT_TRUE(CheckListenAddress("address", good).ok()) << good;
  }
  for (const char* bad : {"127.0.0.1:99999", "127.0.0.1", ":50051", "127.0.0.1:", "host:-1",
                          "host:12ab", "::1:50051", "[::1:50051", "unix:"}) {
    const absl::Status s = CheckListenAddress("address", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("--address="), std::string::npos) << s;
  }
  EXPECT_EQ(CheckListenAddress("address", "127.0.0.1:99999").message(),
            "--address=\"127.0.0.1:99999\" must be HOST:PORT with a port in 0..65535 (0: any "
            "free port), [IPV6]:PORT or unix:PATH");
}

TEST(FlagChecks, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.1:50051"));
}

}  // namespace
}  // namespace clickd
