// The config encoding's memory budget (version 9): round trip, and older
// encodings read as unbounded. The other fields' tests are in
// snapshot_test.cc.
#include "core/persist/model_config_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(ModelConfigEncoding, RoundTripsTheMemoryBudget) {
  ModelConfig config;
  config.name = "budgeted";
  config.memory.max_bytes = uint64_t{3} << 30;
  std::string bytes;
  EncodeModelConfig(config, &bytes);
  ASSERT_EQ(bytes[4], 9);
  auto decoded = DecodeModelConfig(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.max_bytes, uint64_t{3} << 30);
  std::string again;
  EncodeModelConfig(*decoded, &again);
  EXPECT_EQ(again, bytes);
  // Out of range is a corrupt config.
  std::string small = bytes;
  small.replace(small.size() - 8, 8, std::string("\x10\x00\x00\x00\x00\x00\x00\x00", 8));
  auto refused = DecodeModelConfig(small);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("memory.max_bytes is 16"), std::string::npos)
      << refused.status();
}

// Version 8 (written before the budget) reads as unbounded.
TEST(ModelConfigEncoding, VersionEightReadsAsUnbounded) {
  ModelConfig config;
  config.name = "old";
  config.memory.max_bytes = 1 << 20;
  std::string v9;
  EncodeModelConfig(config, &v9);
  std::string v8 = v9.substr(0, v9.size() - 8);
  v8[4] = 8;
  auto decoded = DecodeModelConfig(v8);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->memory.max_bytes, 0u);
  EXPECT_EQ(decoded->name, "old");
  // A v9 encoding cut short of the budget does not parse.
  std::string cut = v9.substr(0, v9.size() - 8);
  EXPECT_EQ(DecodeModelConfig(cut).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace clickd
