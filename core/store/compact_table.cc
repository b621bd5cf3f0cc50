#include "core/store/compact_table.h"

#include <random>

namespace clickd {
namespace compact_table_internal {

uint64_t PositionSeed() {
  static const uint64_t seed = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

}  // namespace compact_table_internal
}  // namespace clickd
