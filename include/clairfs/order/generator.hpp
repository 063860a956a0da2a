// SPDX-License-Identifier: MIT
// torch's CPU generator (at::CPUGeneratorImpl) as far as sampling needs it:
// std::mt19937 seeded with the low 32 bits of the 64-bit seed; 64-bit draws
// take the high word first. Verified against torch 1.13.1 (tests/order/).
#pragma once

#include "clairfs/config/value_parsers.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace clairfs::order {

class CpuGenerator {
public:
    // manual_seed(seed) for any seed in [-2^63, 2^64): pass it as uint64_t
    // (two's complement for negatives); only its low 32 bits matter.
    explicit CpuGenerator(uint64_t seed) : mt_(static_cast<uint32_t>(seed)) {}

    uint32_t random() { return static_cast<uint32_t>(mt_()); }
    uint64_t random64() {
        uint64_t hi = random();
        return (hi << 32) | random();
    }
    // torch.empty((), dtype=int64).random_(generator): the seed draw made by
    // RandomSampler and by the DataLoader's base_seed. Two 32-bit draws.
    int64_t random_int64() { return static_cast<int64_t>(random64() % (uint64_t{1} << 63)); }

    void discard(uint64_t draws) { mt_.discard(draws); }

private:
    std::mt19937 mt_;
};

// A Python int seed as torch keeps it, parsed by config (value_parsers.hpp).
using config::parse_seed;
using config::Seed;

} // namespace clairfs::order
