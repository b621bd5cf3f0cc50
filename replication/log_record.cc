#include "replication/log_record.h"

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"
#include "core/base/crc32c.h"

namespace clickd {

void EncodeLogRecordHeader(LogRecord::Kind kind, std::string_view model, uint64_t created_sequence,
                           std::string* out) {
  out->clear();
  coding::PutFixed32(out, 0);  // the checksum, filled in by SealLogRecord
  out->push_back(static_cast<char>(kind));
  coding::PutString(out, model);
  coding::PutFixed64(out, created_sequence);
}

void SealLogRecord(std::string* record) {
  const uint32_t crc = crc32c::Mask(crc32c::Value(record->data() + 4, record->size() - 4));
  std::string sealed;
  coding::PutFixed32(&sealed, crc);
  record->replace(0, 4, sealed);
}

std::string EncodeLogRecord(const LogRecord& record) {
  std::string out;
  EncodeLogRecordHeader(record.kind, record.model, record.created_sequence, &out);
  out += record.payload;
  SealLogRecord(&out);
  return out;
}

absl::StatusOr<LogRecord> DecodeLogRecord(std::string_view bytes) {
  coding::Decoder in(bytes);
  uint32_t crc = 0;
  if (!in.GetFixed32(&crc)) {
    return absl::DataLossError(absl::StrCat("log record of ", bytes.size(), " bytes is truncated"));
  }
  if (crc32c::Unmask(crc) != crc32c::Value(in.remaining().data(), in.remaining().size())) {
    return absl::DataLossError("log record checksum mismatch");
  }
  std::string_view kind;
  LogRecord record;
  if (!in.GetBytes(1, &kind) || !in.GetString(&record.model) ||
      !in.GetFixed64(&record.created_sequence)) {
    return absl::DataLossError("log record header is truncated");
  }
  record.kind = static_cast<LogRecord::Kind>(kind[0]);
  if (record.kind != LogRecord::Kind::kCreate && record.kind != LogRecord::Kind::kDelete &&
      record.kind != LogRecord::Kind::kUpdate) {
    return absl::DataLossError(
        absl::StrCat("log record has unknown kind ", static_cast<int>(kind[0])));
  }
  record.payload = std::string(in.remaining());
  return record;
}

}  // namespace clickd
