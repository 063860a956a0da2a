// SPDX-License-Identifier: MIT
#include "clairfs/order/samplers.hpp"

#include <algorithm>

namespace clairfs::order {
namespace {

// torch.randint(high=n) chunks by 32 but draws one value % n per sample:
// random() below 2^28 (below 2^32 up to torch 2.6), else random64().
void with_replacement(uint32_t n, uint64_t count, CpuGenerator& g, TorchVersion v,
                      std::vector<Sample>& out) {
    out.resize(count);
    if (randint_draws64(n, v))
        for (auto& s : out) s = static_cast<Sample>(g.random64() % n);
    else
        for (auto& s : out) s = g.random() % n;
}

void without_replacement(uint32_t n, uint64_t count, CpuGenerator& g, TorchVersion v,
                         std::vector<Sample>& out) {
    out.clear();
    out.reserve(count);
    std::vector<Sample> perm;
    for (uint64_t full = count / n; full > 0; --full) {
        randperm(n, g, v, perm);
        out.insert(out.end(), perm.begin(), perm.end());
    }
    uint64_t rest = count % n;
    if (rest == 0) {
        g.discard(randperm_draws(n, v)); // computed and thrown away by torch
        return;
    }
    randperm(n, g, v, perm);
    out.insert(out.end(), perm.begin(), perm.begin() + static_cast<ptrdiff_t>(rest));
}

} // namespace

void random_sampler_epoch(uint32_t n, uint64_t num_samples, bool replacement, CpuGenerator& g,
                          TorchVersion version, std::vector<Sample>& out) {
    if (replacement)
        with_replacement(n, num_samples, g, version, out);
    else if (num_samples == n) {
        // The common case without a copy: one permutation, one skipped.
        randperm(n, g, version, out);
        g.discard(randperm_draws(n, version));
    } else {
        without_replacement(n, num_samples, g, version, out);
    }
}

} // namespace clairfs::order
