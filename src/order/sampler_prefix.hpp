// SPDX-License-Identifier: MIT
// The first positions of a RandomSampler's epoch from its freshly seeded
// generator: shared by the chain searches (prefix_search.cpp, chain_scan.cpp).
#pragma once

#include "clairfs/order/prefix_search.hpp"

#include <vector>

namespace clairfs::order {

// RandomSampler(replacement=True): torch.randint(n) draws random() % n each,
// or random64() % n (high word first) where randint_draws64.
inline void replacement_prefix(uint32_t n, uint32_t k, bool draws64, LazyMt19937& g,
                               std::vector<Sample>& out) {
    out.resize(k);
    if (draws64) {
        for (auto& s : out) {
            uint64_t hi = g();
            s = static_cast<Sample>(((hi << 32) | g()) % n);
        }
    } else {
        for (auto& s : out) s = g() % n;
    }
}

// The first `window` samples of the epoch: randperm's prefix, or the draws
// with replacement.
inline void sampler_prefix(uint32_t n, uint32_t window, bool replacement, bool draws64,
                           LazyMt19937& g, PermPrefix& perm, std::vector<Sample>& out) {
    if (replacement)
        replacement_prefix(n, window, draws64, g, out);
    else
        perm.compute(n, window, g, out);
}

} // namespace clairfs::order
