// LogRecord: what one message of the replicated log (the JetStream stream
// every replica applies in order) says. One stream carries every model's
// records, so creates, deletes and updates have one total order: replicas
// that applied the same prefix agree on the set of models, their configs
// and their state, with no coordination of our own.
//
//   record := masked crc32c u32 (of everything after it) | kind u8 |
//             model string (u32 length + bytes) | created_sequence u64 |
//             payload (the rest)
//
//   kCreate: payload is the model's config (EncodeModelConfig).
//   kDelete: no payload.
//   kUpdate: payload is one batch (EncodeBatch) or one record of the
//            impression-to-click loop (core/persist/feedback_codec.h:
//            impressions whose ids are given when applied, feedback, or a
//            tick of the loop's clock); created_sequence is the
//            sequence of the CREATE record of the model the batch was
//            accepted for, so that a batch accepted before a model was
//            deleted and re-created under the same name is not learned by
//            the new one.
//
// Pure functions; decoding is bounds-checked and returns DataLoss.
#ifndef CLICKD_REPLICATION_LOG_RECORD_H_
#define CLICKD_REPLICATION_LOG_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace clickd {

struct LogRecord {
  enum class Kind : uint8_t { kCreate = 1, kDelete = 2, kUpdate = 3 };
  Kind kind = Kind::kUpdate;
  std::string model;
  uint64_t created_sequence = 0;  // kUpdate only
  std::string payload;
};

// The same bytes EncodeLogRecord writes for a record, without copying the
// payload first (the update path encodes the batch straight into `out`).
void EncodeLogRecordHeader(LogRecord::Kind kind, std::string_view model, uint64_t created_sequence,
                           std::string* out);
// Finishes a record begun with EncodeLogRecordHeader and followed by its
// payload: fills in the checksum.
void SealLogRecord(std::string* record);

std::string EncodeLogRecord(const LogRecord& record);
absl::StatusOr<LogRecord> DecodeLogRecord(std::string_view bytes);

}  // namespace clickd

#endif  // CLICKD_REPLICATION_LOG_RECORD_H_
