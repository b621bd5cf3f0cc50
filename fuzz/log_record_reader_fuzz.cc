// Fuzzes what a replica does with a record of the replicated log (any
// publisher can write to the stream): decode the record, then its payload as
// the applier would (a model config or a batch). Any bytes must give a value
// or an error, never a crash, a hang or an out-of-bounds read; a record that
// decodes must re-encode to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/persist/batch_codec.h"
#include "core/persist/snapshot.h"
#include "replication/log_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto record = clickd::DecodeLogRecord(bytes);
  if (!record.ok()) return 0;
  if (clickd::EncodeLogRecord(*record) != bytes) std::abort();
  switch (record->kind) {
    case clickd::LogRecord::Kind::kCreate:
      (void)clickd::DecodeModelConfig(record->payload);
      break;
    case clickd::LogRecord::Kind::kUpdate:
      (void)clickd::DecodeBatch(record->payload);
      break;
    case clickd::LogRecord::Kind::kDelete:
      break;
  }
  return 0;
}
