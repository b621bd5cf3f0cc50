// Fuzzes the snapshot reader: any bytes must give a snapshot or an error,
// never a crash, a hang or an out-of-bounds read; a snapshot that decodes
// must re-encode to bytes that decode to it again (the same bytes, unless
// its model config used an older encoding, which re-encodes as the current).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/persist/snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = clickd::DecodeSnapshot(bytes);
  if (!decoded.ok()) return 0;
  const std::string encoded = clickd::EncodeSnapshot(*decoded);
  if (encoded == bytes) return 0;
  auto again = clickd::DecodeSnapshot(encoded);
  if (!again.ok() || clickd::EncodeSnapshot(*again) != encoded) std::abort();
  return 0;
}
