// CRC32C (Castagnoli), the checksum of every on-disk block and log record.
// Abseil 20220623 has no absl/crc and Debian 12 packages no CRC32C library
// for C++, so this is our own: SSE 4.2's crc32 instruction where the CPU
// has it (x86-64), else a table-driven implementation (slicing by 8); both
// are checked against the standard value 0xE3069283 for "123456789" and
// against each other. Pure functions.
#ifndef CLICKD_CORE_BASE_CRC32C_H_
#define CLICKD_CORE_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace clickd::crc32c {

// Returns the CRC32C of data[0, n) continuing from `crc` (0 to start).
uint32_t Extend(uint32_t crc, const void* data, size_t n);

// The same with the tables only, whatever the CPU (for tests and targets
// without the instruction).
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);

// Whether Extend uses the CPU's instruction.
bool Accelerated();

inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// Stored CRCs are masked (as LevelDB does) so that a CRC computed over data
// that itself contains CRCs does not degenerate.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// A blob sealed by its trailing masked CRC: Seal appends the masked CRC32C
// of everything in *out (4 bytes, little-endian); Unseal checks it and
// returns the bytes before it, or false if the blob is shorter than 4 bytes
// or its CRC does not match.
inline void Seal(std::string* out) {
  const uint32_t masked = Mask(Value(out->data(), out->size()));
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(masked >> (8 * i)));
}
inline bool Unseal(std::string_view sealed, std::string_view* body) {
  if (sealed.size() < 4) return false;
  *body = sealed.substr(0, sealed.size() - 4);
  uint32_t masked = 0;
  for (int i = 0; i < 4; ++i) {
    masked |= uint32_t{static_cast<unsigned char>(sealed[body->size() + i])} << (8 * i);
  }
  return Unmask(masked) == Value(body->data(), body->size());
}

}  // namespace clickd::crc32c

#endif  // CLICKD_CORE_BASE_CRC32C_H_
