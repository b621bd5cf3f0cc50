#include "core/base/quote.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(Quote, ShortStringsAreQuotedWhole) {
  EXPECT_EQ(Quote("ctr"), "\"ctr\"");
  EXPECT_EQ(Quote(""), "\"\"");
}

TEST(Quote, UnprintableBytesAreEscaped) {
  EXPECT_EQ(Quote(std::string("a\nb \0", 5)), "\"a\\nb \\x00\"");
}

TEST(Quote, LongStringsKeepAPrefixAndTheirLength) {
  const std::string quoted = Quote(std::string(10240, 'x'));
  EXPECT_EQ(quoted, "\"" + std::string(kQuotedPrefixBytes, 'x') + "...\" (10240 bytes)");
}

}  // namespace
}  // namespace clickd
