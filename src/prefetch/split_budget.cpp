// SPDX-License-Identifier: MIT
// --mem split between whole files and chunks (engine_options.hpp).
#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/engine_options.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::prefetch {

EngineOptions split_budget(const index::Index& idx, EngineOptions opt) {
    if (opt.max_file == 0) opt.max_file = opt.mem / 16;
    opt.chunk_mem = 0;
    if (opt.mem == 0 || opt.chunk_size == 0) return opt;
    uint64_t whole = 0, large = 0;
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (!S_ISREG(n.mode)) continue;
        (n.size > opt.max_file ? large : whole) += n.size;
    }
    if (large == 0) return opt;
    auto share = static_cast<uint64_t>(static_cast<double>(opt.mem) * static_cast<double>(large) /
                                       static_cast<double>(large + whole));
    // At least room to read one file ahead (8 chunks, or the large files
    // whole if less), but never more than half for that floor: one stray
    // archive beside a million JPEGs must not halve the JPEGs' RAM.
    uint64_t floor = std::min({large, uint64_t{8} * opt.chunk_size, opt.mem / 2});
    uint64_t chunk_mem = whole == 0 ? opt.mem : std::max(share, floor);
    if (chunk_mem < uint64_t{4} * opt.chunk_size) return opt; // too small to read ahead into
    opt.chunk_mem = chunk_mem;
    opt.mem -= chunk_mem;
    return opt;
}

} // namespace clairfs::prefetch
