// SPDX-License-Identifier: MIT
#include "clairfs/order/numpy_random.hpp"

#include <utility>

namespace clairfs::order {

uint64_t numpy_random_interval(std::mt19937& mt, uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
    uint64_t v;
    if (max <= UINT32_MAX) {
        while ((v = mt() & mask) > max) {
        }
        return v;
    }
    auto next64 = [&mt] {
        uint64_t hi = mt();
        return (hi << 32) | mt();
    };
    while ((v = next64() & mask) > max) {
    }
    return v;
}

void numpy_shuffle(uint32_t seed, std::span<Sample> x) {
    std::mt19937 mt(seed);
    for (size_t i = x.size(); i-- > 1;) std::swap(x[i], x[numpy_random_interval(mt, i)]);
}

// randint(high) is _rand_int64(0, high - 1) with masked rejection; a range
// that fits 32 bits takes 32-bit draws.
uint32_t numpy_randint(uint32_t seed, uint64_t high) {
    std::mt19937 mt(seed);
    return static_cast<uint32_t>(numpy_random_interval(mt, high - 1));
}

} // namespace clairfs::order
