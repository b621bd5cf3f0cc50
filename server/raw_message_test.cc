#include "server/raw_message.h"

#include <string>

#include "clickd/v1/clickd.pb.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

grpc::ByteBuffer BytesOf(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

TEST(RawMessage, RoundTrip) {
  v1::PredictRequest request;
  request.set_model("ctr");
  request.add_candidates()->add_namespaces()->set_name("ad");
  grpc::ByteBuffer bytes;
  ASSERT_TRUE(SerializeResponse(request, &bytes).ok());
  v1::PredictRequest parsed;
  ASSERT_TRUE(ParseRequest(bytes, &parsed).ok());
  EXPECT_EQ(parsed.SerializeAsString(), request.SerializeAsString());
  // The bytes are still there for another reader.
  v1::PredictRequest again;
  ASSERT_TRUE(ParseRequest(bytes, &again).ok());
  EXPECT_EQ(again.model(), "ctr");
}

TEST(RawMessage, GarbageIsInvalidArgumentNamingTheType) {
  v1::UpdateRequest parsed;
  const absl::Status s =
      ParseRequest(BytesOf("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), &parsed);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "the request is not a valid clickd.v1.UpdateRequest (11 bytes)");
  // A length-delimited field that runs past the end.
  EXPECT_FALSE(ParseRequest(BytesOf("\x0a\x10"
                                    "ab"),
                            &parsed)
                   .ok());
}

TEST(RawMessage, EmptyBytesAreTheEmptyMessage) {
  v1::GetModelRequest parsed;
  EXPECT_TRUE(ParseRequest(grpc::ByteBuffer(), &parsed).ok());
  EXPECT_EQ(parsed.model(), "");
}

}  // namespace
}  // namespace clickd
