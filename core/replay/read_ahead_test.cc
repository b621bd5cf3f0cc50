#include "core/replay/read_ahead.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/model/state_digest.h"
#include "core/replay/replay.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

HashedExample Numbered(int i) {
  HashedExample e;
  for (int k = 0; k <= i % 5; ++k) e.features.push_back({static_cast<uint64_t>(i * 10 + k), 1.0f});
  e.label = static_cast<float>(i);
  return e;
}

TEST(ReadAheadTest, HandsOverEveryExampleInOrderThenTheStatus) {
  for (size_t batch_size : {1, 3, 256}) {
    ReadAhead reader(
        [](ReadAhead::Emit emit) {
          for (int i = 0; i < 1000; ++i) {
            if (!emit(Numbered(i))) return absl::InternalError("stopped early");
          }
          return absl::DataLossError("end of a damaged file");
        },
        batch_size, 3);
    int next = 0;
    for (auto batch = reader.NextBatch(); !batch.empty(); batch = reader.NextBatch()) {
      EXPECT_LE(batch.size(), batch_size);
      for (const HashedExample& e : batch) {
        ASSERT_EQ(e.label, next) << "batch size " << batch_size;
        ASSERT_EQ(e.features, Numbered(next).features);
        ++next;
      }
    }
    EXPECT_EQ(next, 1000);
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(ReadAheadTest, AConsumerThatLeavesEarlyStopsTheProducer) {
  std::atomic<int> emitted{0};
  std::atomic<bool> told_to_stop{false};
  {
    ReadAhead reader(
        [&](ReadAhead::Emit emit) {
          // Unbounded but for the stop: the ring of 2 batches of 4 fills.
          for (int i = 0; i < 1000000; ++i) {
            if (!emit(Numbered(i))) {
              told_to_stop = true;
              break;
            }
            ++emitted;
          }
          return absl::OkStatus();
        },
        4, 2);
    EXPECT_FALSE(reader.NextBatch().empty());
  }  // destroyed with the producer blocked on a full ring
  EXPECT_TRUE(told_to_stop);
  EXPECT_LT(emitted, 100);
}

TEST(ReadAheadTest, AnEmptyProducerEndsAtOnce) {
  ReadAhead reader([](ReadAhead::Emit) { return absl::OkStatus(); });
  EXPECT_TRUE(reader.NextBatch().empty());
  EXPECT_TRUE(reader.status().ok());
}

// A replay learns the same model and the same metrics with and without
// reading ahead, and stops at the same bad line with the same message.
class ReplayReadAheadTest : public ::testing::Test {
 protected:
  std::string WriteLog(const std::string& name, int lines, int bad_line) {
    const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
    std::ofstream out(path);
    for (int i = 1; i <= lines; ++i) {
      if (i == bad_line) {
        out << "not_a_label |a x\n";
        continue;
      }
      out << ((i * 7919) % 13 == 0 ? "1" : "-1") << " |a f" << i % 97 << " g" << i % 11 << " |b h"
          << (i * 31) % 1009 << "\n";
    }
    return path;
  }

  struct Run {
    absl::Status status;
    ReplayResult result;
    std::string digest;
  };

  Run Replay(const std::string& path, bool read_ahead, bool skip_bad_lines,
             const std::optional<std::string>& test_path = std::nullopt) {
    ModelConfig config;
    config.loss = LossType::kLogistic;
    auto model = CreateModel(config);
    EXPECT_TRUE(model.ok()) << model.status();
    ReplayOptions options;
    options.format = InputFormat::kVw;
    options.read_ahead = read_ahead;
    options.skip_bad_lines = skip_bad_lines;
    Run run;
    auto result = ReplayOffline(**model, path, test_path, options);
    run.status = result.status();
    if (result.ok()) run.result = *result;
    run.digest = StateDigest(**model);
    return run;
  }
};

TEST_F(ReplayReadAheadTest, SameModelAndMetricsWithAndWithout) {
  const std::string train = WriteLog("read_ahead_train.vw", 5000, 0);
  const std::string test = WriteLog("read_ahead_test.vw", 700, 0);
  const Run serial = Replay(train, false, false, test);
  const Run ahead = Replay(train, true, false, test);
  ASSERT_TRUE(serial.status.ok()) << serial.status;
  ASSERT_TRUE(ahead.status.ok()) << ahead.status;
  EXPECT_EQ(ahead.digest, serial.digest);
  EXPECT_EQ(ahead.result.progressive.examples, 5000u);
  EXPECT_EQ(ahead.result.progressive.logloss, serial.result.progressive.logloss);
  EXPECT_EQ(ahead.result.progressive.auc, serial.result.progressive.auc);
  EXPECT_EQ(ahead.result.features, serial.result.features);
  ASSERT_TRUE(ahead.result.test.has_value());
  EXPECT_EQ(ahead.result.test->logloss, serial.result.test->logloss);
}

TEST_F(ReplayReadAheadTest, SameErrorAndSameModelUpToTheBadLine) {
  const std::string train = WriteLog("read_ahead_bad.vw", 3000, 2100);
  const Run serial = Replay(train, false, false);
  const Run ahead = Replay(train, true, false);
  EXPECT_EQ(serial.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ahead.status, serial.status);
  EXPECT_NE(ahead.status.message().find(":2100:"), std::string::npos) << ahead.status;
  EXPECT_EQ(ahead.digest, serial.digest);  // the 2,099 lines before it, learned

  const Run serial_skip = Replay(train, false, true);
  const Run ahead_skip = Replay(train, true, true);
  ASSERT_TRUE(ahead_skip.status.ok()) << ahead_skip.status;
  EXPECT_EQ(ahead_skip.result.skipped_lines, 1u);
  EXPECT_EQ(ahead_skip.result.skipped_errors, serial_skip.result.skipped_errors);
  EXPECT_EQ(ahead_skip.digest, serial_skip.digest);
}

}  // namespace
}  // namespace clickd
