// SPDX-License-Identifier: MIT
#include "clairfs/order/randperm.hpp"

#include <numeric>

namespace clairfs::order {
namespace {

// torch <= 2.5 (and 2.6+ below the threshold): forward Fisher-Yates with
// one 32-bit draw per step and plain (biased) modulo; n - 1 draws.
void forward_fisher_yates(uint32_t n, CpuGenerator& g, std::vector<Sample>& r) {
    for (uint32_t i = 0; i + 1 < n; ++i) {
        uint32_t z = g.random() % (n - i);
        std::swap(r[i], r[i + z]);
    }
}

// torch 2.6+ for n >= UINT32_MAX / 20: "inside-out" with 64-bit draws; 2n draws.
void inside_out_64(uint32_t n, CpuGenerator& g, std::vector<Sample>& r) {
    for (uint32_t i = 0; i < n; ++i) {
        auto z = static_cast<uint32_t>(g.random64() % (uint64_t{i} + 1));
        r[i] = r[z];
        r[z] = i;
    }
}

} // namespace

uint64_t randperm_draws(uint32_t n, TorchVersion version) {
    if (randperm_inside_out(n, version)) return 2 * uint64_t{n};
    return n > 0 ? n - 1 : 0;
}

void randperm(uint32_t n, CpuGenerator& g, TorchVersion version, std::vector<Sample>& out) {
    out.resize(n);
    std::iota(out.begin(), out.end(), Sample{0});
    if (randperm_inside_out(n, version))
        inside_out_64(n, g, out);
    else
        forward_fisher_yates(n, g, out);
}

} // namespace clairfs::order
