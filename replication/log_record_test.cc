#include "replication/log_record.h"

#include <gtest/gtest.h>

namespace clickd {
namespace {

TEST(LogRecord, RoundTripsEveryKind) {
  for (auto kind : {LogRecord::Kind::kCreate, LogRecord::Kind::kDelete, LogRecord::Kind::kUpdate}) {
    LogRecord record{kind, "ctr-model", 42, std::string("pay\0load", 8)};
    auto decoded = DecodeLogRecord(EncodeLogRecord(record));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->kind, kind);
    EXPECT_EQ(decoded->model, "ctr-model");
    EXPECT_EQ(decoded->created_sequence, 42u);
    EXPECT_EQ(decoded->payload, record.payload);
  }
}

TEST(LogRecord, HeaderThenPayloadEncodesLikeTheWholeRecord) {
  LogRecord record{LogRecord::Kind::kUpdate, "m", 7, "batch bytes"};
  std::string incremental;
  EncodeLogRecordHeader(record.kind, record.model, record.created_sequence, &incremental);
  incremental += record.payload;
  SealLogRecord(&incremental);
  EXPECT_EQ(incremental, EncodeLogRecord(record));
}

TEST(LogRecord, EveryFlippedByteAndEveryTruncationIsDataLoss) {
  const std::string bytes = EncodeLogRecord({LogRecord::Kind::kUpdate, "model", 3, "payload"});
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x40;
    EXPECT_EQ(DecodeLogRecord(damaged).status().code(), absl::StatusCode::kDataLoss) << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeLogRecord(bytes.substr(0, n)).status().code(), absl::StatusCode::kDataLoss)
        << n;
  }
}

TEST(LogRecord, UnknownKindIsDataLossEvenWithAValidChecksum) {
  std::string record;
  EncodeLogRecordHeader(static_cast<LogRecord::Kind>(9), "m", 0, &record);
  SealLogRecord(&record);
  auto decoded = DecodeLogRecord(record);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(decoded.status().message().find("unknown kind 9"), std::string::npos);
}

}  // namespace
}  // namespace clickd
