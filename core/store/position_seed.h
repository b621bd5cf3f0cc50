// A seed for hash tables' slot positions, random per process, so that
// callers who choose their keys (packed pre-hashed ids) cannot pile them
// onto one probe sequence: FlatTable and CompactTable mix it into the
// position (not the identity) of every key.
#ifndef CLICKD_CORE_STORE_POSITION_SEED_H_
#define CLICKD_CORE_STORE_POSITION_SEED_H_

#include <cstdint>

namespace clickd {

uint64_t PositionSeed();

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_POSITION_SEED_H_
