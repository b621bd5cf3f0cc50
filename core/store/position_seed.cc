#include "core/store/position_seed.h"

#include <random>

namespace clickd {

uint64_t PositionSeed() {
  static const uint64_t seed = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

}  // namespace clickd
