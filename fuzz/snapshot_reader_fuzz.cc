// Fuzzes the snapshot reader: any bytes must give a snapshot or an error,
// never a crash, a hang or an out-of-bounds read; a snapshot that decodes
// must re-encode to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/persist/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = clickd::DecodeSnapshot(bytes);
  if (decoded.ok() && clickd::EncodeSnapshot(*decoded) != bytes) std::abort();
  return 0;
}
