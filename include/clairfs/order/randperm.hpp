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

enum class TorchVersion {
    v1_13, // forward Fisher-Yates, one 32-bit draw per element (torch <= 2.6)
    v2_7,  // the same below 214,748,364 elements; above, inside-out with 64-bit draws
};

// torch.randperm(n, generator=g) on CPU, written into `out` (resized to n).
void randperm(uint32_t n, CpuGenerator& g, TorchVersion version, std::vector<Sample>& out);

// How many 32-bit draws randperm(n) takes from its generator, so that a
// permutation nobody reads can be skipped instead of computed.
uint64_t randperm_draws(uint32_t n, TorchVersion version);

// The size from which torch 2.7 switches to 64-bit draws: UINT32_MAX / 20.
inline constexpr uint32_t randperm64_threshold = UINT32_MAX / 20;

} // namespace clairfs::order
