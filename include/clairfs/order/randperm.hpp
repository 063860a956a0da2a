// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/order/generator.hpp"

#include <cstdint>
#include <vector>

namespace clairfs::order {

// Sample indices are 32-bit: a node's schedule holds one per sample and
// epoch, and no dataset has 2^32 files behind one mount.
using Sample = uint32_t;
inline constexpr uint64_t max_samples = UINT32_MAX;

// The torch releases whose CPU sampling differs, as far as a DataLoader's
// order goes. Each level keeps every change of the levels before it.
enum class TorchVersion {
    v1_13, // torch 1.x to 2.5: forward Fisher-Yates, one 32-bit draw per element
    v2_6,  // 2.6: randperm of 214,748,364 elements or more is inside-out with 64-bit draws
    v2_7,  // 2.7 and later: also randint (RandomSampler replacement=True) draws 64 bits
           // for ranges of 2^28 or more
};

// torch.randperm(n, generator=g) on CPU, written into `out` (resized to n).
void randperm(uint32_t n, CpuGenerator& g, TorchVersion version, std::vector<Sample>& out);

// How many 32-bit draws randperm(n) takes from its generator, so that a
// permutation nobody reads can be skipped instead of computed.
uint64_t randperm_draws(uint32_t n, TorchVersion version);

// The size from which torch 2.6 switches randperm to 64-bit draws: UINT32_MAX / 20.
inline constexpr uint32_t randperm64_threshold = UINT32_MAX / 20;

// Whether randperm(n) is the inside-out variant with 64-bit draws (else the
// forward Fisher-Yates of 1.13, whose position i is fixed at step i).
inline bool randperm_inside_out(uint32_t n, TorchVersion v) {
    return v >= TorchVersion::v2_6 && n >= randperm64_threshold;
}

// The range from which torch 2.7's randint (random_from_to) draws 64 bits
// per value instead of 32 (torch <= 2.6: from 2^32).
inline constexpr uint64_t randint64_threshold = uint64_t{1} << 28;

// Whether torch.randint(high=range) takes random64() per value (else random()).
inline bool randint_draws64(uint64_t range, TorchVersion v) {
    return range >= (uint64_t{1} << 32) || (v >= TorchVersion::v2_7 && range >= randint64_threshold);
}

} // namespace clairfs::order
