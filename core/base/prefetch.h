// PrefetchRead(p): asks for the cache line holding p ahead of a read, so
// that the miss overlaps other work. Never faults, whatever p is.
//
// An asm statement rather than __builtin_prefetch: g++ 12 at -O2 deletes a
// __builtin_prefetch whose address depends on a 128-bit product (found
// with objdump on 2026-11-27: FlatTable::Prefetch compiled to a bare `ret`,
// as did CompactTable's behind ShardedStore's shard index), and our tables
// compute positions that way. A volatile asm cannot be removed.
#ifndef CLICKD_CORE_BASE_PREFETCH_H_
#define CLICKD_CORE_BASE_PREFETCH_H_

namespace clickd {

inline void PrefetchRead(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace clickd

#endif  // CLICKD_CORE_BASE_PREFETCH_H_
