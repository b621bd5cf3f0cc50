// LogChain: a running digest chained over every record a replica applied,
//   chain(s) = XXH3-128(chain(s-1).high || chain(s-1).low || s || record s),
//   chain(0) = 0 (all fixed64 little-endian),
// so two replicas whose chains are equal at s applied the same records
// 1..s. Replica snapshots carry it (replica_snapshot.h); checkpoints compare
// it between replicas (divergence.h).
//
// Thread safety: pure functions and a value type.
#ifndef CLICKD_REPLICATION_LOG_CHAIN_H_
#define CLICKD_REPLICATION_LOG_CHAIN_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace clickd {

struct LogDigest {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const LogDigest&) const = default;
};

// 32 hex digits.
std::string LogDigestHex(const LogDigest& digest);

// chain(sequence) from chain(sequence - 1) and the record at `sequence`.
LogDigest ExtendLogChain(const LogDigest& previous, uint64_t sequence, std::string_view record);

}  // namespace clickd

#endif  // CLICKD_REPLICATION_LOG_CHAIN_H_
