// The dense optimizers' state layout: header checks and error codes.
#include "core/optim/dense/dense_state_codec.h"

#include <string>

#include "core/base/crc32c.h"
#include "gtest/gtest.h"

namespace clickd::dense_state {
namespace {

std::string Sample() {
  Writer w("ada_fd", 3, 2, 41);
  w.Put(Eigen::MatrixXd::Constant(2, 3, 0.5).eval());
  w.Put(Eigen::VectorXd::LinSpaced(3, -1, 1).eval());
  return std::move(w).Finish();
}

// Re-seals bytes whose body was edited, so only the edit is wrong.
std::string Reseal(std::string bytes) {
  bytes.resize(bytes.size() - 4);
  coding::PutFixed32(&bytes, crc32c::Mask(crc32c::Value(bytes.data(), bytes.size())));
  return bytes;
}

TEST(DenseStateCodecTest, RoundTrips) {
  const std::string bytes = Sample();  // the reader views it
  absl::StatusOr<Reader> r = Reader::Open(bytes, "ada_fd", 3, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rounds(), 41u);
  absl::StatusOr<Eigen::MatrixXd> m = r->Matrix("S", 2, 3);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, Eigen::MatrixXd::Constant(2, 3, 0.5));
  EXPECT_FALSE(r->Finish().ok());  // one block left
  absl::StatusOr<Eigen::VectorXd> v = r->Vector("weights", 3);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)(0), -1.0);
  EXPECT_TRUE(r->Finish().ok());
}

TEST(DenseStateCodecTest, HeaderMismatchesAreInvalidArgument) {
  const std::string bytes = Sample();
  EXPECT_NE(Reader::Open(bytes, "fd_son", 3, 2).status().message().find("\"ada_fd\" state"),
            std::string::npos);
  EXPECT_EQ(Reader::Open(bytes, "ada_fd", 4, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Reader::Open(bytes, "ada_fd", 3, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::string other_magic = bytes;
  other_magic[0] ^= 1;
  EXPECT_NE(Reader::Open(Reseal(other_magic), "ada_fd", 3, 2)
                .status()
                .message()
                .find("not a dense optimizer state"),
            std::string::npos);
  std::string other_version = bytes;
  other_version[4] = 9;
  EXPECT_NE(Reader::Open(Reseal(other_version), "ada_fd", 3, 2)
                .status()
                .message()
                .find("version 9 is unsupported"),
            std::string::npos);
}

TEST(DenseStateCodecTest, DamageIsDataLoss) {
  const std::string bytes = Sample();
  EXPECT_EQ(Reader::Open(bytes.substr(0, 3), "ada_fd", 3, 2).status().code(),
            absl::StatusCode::kDataLoss);
  std::string flipped = bytes;
  flipped[30] ^= 4;
  EXPECT_NE(Reader::Open(flipped, "ada_fd", 3, 2).status().message().find("checksum mismatch"),
            std::string::npos);
  // A block of the wrong shape, and a NaN, both intact by checksum.
  absl::StatusOr<Reader> r = Reader::Open(bytes, "ada_fd", 3, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Matrix("S", 3, 2).status().code(), absl::StatusCode::kDataLoss);
  Writer w("ada_fd", 3, 2, 0);
  w.Put(Eigen::VectorXd::Constant(3, NAN).eval());
  const std::string nan_bytes = std::move(w).Finish();
  absl::StatusOr<Reader> nan = Reader::Open(nan_bytes, "ada_fd", 3, 2);
  ASSERT_TRUE(nan.ok());
  EXPECT_NE(nan->Vector("weights", 3).status().message().find("non-finite value at 0"),
            std::string::npos);
}

}  // namespace
}  // namespace clickd::dense_state
