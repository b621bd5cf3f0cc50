// Fuzzes the update-log reader: segment framing and the batch payload.
// Whatever parses must be consumed within bounds; a batch that decodes must
// re-encode to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/persist/batch_codec.h"
#include "core/persist/file_update_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const size_t whole = clickd::FileUpdateLog::ParseSegment(
      bytes, [](uint64_t, std::string_view payload) { (void)clickd::DecodeBatch(payload); });
  if (whole > size) std::abort();
  auto batch = clickd::DecodeBatch(bytes);
  if (batch.ok()) {
    std::string again;
    clickd::EncodeBatch(batch->batch, &again);
    if (again != bytes) std::abort();
  }
  return 0;
}
