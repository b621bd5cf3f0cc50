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

// The instruction and the tables agree on every length around the 8-byte
// steps, from every alignment, continuing from any CRC.
TEST(Crc32c, AcceleratedEqualsPortable) {
  std::string data(300, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131 + 7) ^ (i >> 3));
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n + offset <= data.size(); ++n) {
      const uint32_t seed = static_cast<uint32_t>(n * 2654435761u);
      ASSERT_EQ(crc32c::Extend(seed, data.data() + offset, n),
                crc32c::ExtendPortable(seed, data.data() + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
  EXPECT_EQ(crc32c::ExtendPortable(0, "123456789", 9), 0xE3069283u);
#if defined(__x86_64__)
  // Every x86-64 machine this project builds and tests on has SSE 4.2.
  EXPECT_TRUE(crc32c::Accelerated());
#endif
}

TEST(Crc32c, MaskRoundTripsAndDiffers) {
  const uint32_t crc = crc32c::Value("foo", 3);
  EXPECT_NE(crc32c::Mask(crc), crc);
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
}

}  // namespace
}  // namespace clickd
