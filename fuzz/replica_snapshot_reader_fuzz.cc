// Fuzzes the replica snapshot reader (a local file, or a snapshot another
// replica published): any bytes must give a snapshot or an error, never a
// crash, a hang or an out-of-bounds read; a snapshot that decodes must
// re-encode to bytes that decode to it again.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "replication/replica_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto decoded = clickd::DecodeReplicaSnapshot(bytes);
  if (!decoded.ok()) return 0;
  const std::string encoded = clickd::EncodeReplicaSnapshot(*decoded);
  if (encoded == bytes) return 0;
  auto again = clickd::DecodeReplicaSnapshot(encoded);
  if (!again.ok() || clickd::EncodeReplicaSnapshot(*again) != encoded) std::abort();
  return 0;
}
