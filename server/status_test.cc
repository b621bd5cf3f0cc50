#include "server/status.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(CallerMessage, HidesTheDataDirectory) {
  EXPECT_EQ(CallerMessage("cannot write /var/lib/clickd/models/a/snapshot-9.snap: disk full",
                          "/var/lib/clickd"),
            "cannot write <data_dir>/models/a/snapshot-9.snap: disk full");
  EXPECT_EQ(CallerMessage("no paths here", "/var/lib/clickd"), "no paths here");
  EXPECT_EQ(CallerMessage("/x/y", ""), "/x/y");
}

TEST(CallerMessage, CutsLongMessagesAndSaysSo) {
  const std::string cut = CallerMessage(std::string(10000, 'x'), "");
  EXPECT_EQ(cut.size(), kMaxCallerMessageBytes);
  EXPECT_EQ(cut.substr(cut.size() - 22), "... (10000 bytes; cut)");
}

TEST(ToGrpcStatus, KeepsTheCode) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  const grpc::Status s = ToGrpcStatus(absl::ResourceExhaustedError("limit"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "limit");
}

}  // namespace
}  // namespace clickd
