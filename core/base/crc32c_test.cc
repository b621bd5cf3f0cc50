#include "core/base/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(Crc32c, StandardCheckValue) { EXPECT_EQ(crc32c::Value("123456789", 9), 0xE3069283u); }

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4: 32 bytes of zeros, and of 0xff.
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(crc32c::Value(zeros.data(), zeros.size()), 0x8a9136aau);
  EXPECT_EQ(crc32c::Value(ones.data(), ones.size()), 0x62a8ab43u);
  EXPECT_EQ(crc32c::Value("", 0), 0u);
}

TEST(Crc32c, ExtendEqualsWholeAtEverySplit) {
  std::string data;
  for (int i = 0; i < 100; ++i) data += static_cast<char>(i * 37);
  const uint32_t whole = crc32c::Value(data.data(), data.size());
  for (size_t split = 0; split <= data.size(); ++split) {
    EXPECT_EQ(
        crc32c::Extend(crc32c::Value(data.data(), split), data.data() + split, data.size() - split),
        whole);
  }
}

TEST(Crc32c, MaskRoundTripsAndDiffers) {
  const uint32_t crc = crc32c::Value("foo", 3);
  EXPECT_NE(crc32c::Mask(crc), crc);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
}

}  // namespace
}  // namespace clickd
