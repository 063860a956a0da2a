// SPDX-License-Identifier: MIT
#include "eviction.hpp"

#include <algorithm>

namespace clairfs::prefetch {

uint64_t next_use(const track::Snapshot& snap, index::NodeId id) {
    uint64_t best = UINT64_MAX;
    for (const auto& r : snap.ranks) {
        if (!r.current) continue;
        const plan::EpochPlan& cur = *r.current;
        uint64_t d = UINT64_MAX;
        for (uint32_t p = cur.position_at_or_after(id, static_cast<uint32_t>(r.frontier));
             p != plan::no_position; p = cur.position_at_or_after(id, p + 1)) {
            if (!r.opened_at(p)) {
                d = p - r.frontier;
                break;
            }
        }
        if (d == UINT64_MAX && r.next && id < r.next->first_position.size() &&
            r.next->first_position[id] != plan::no_position)
            d = (cur.size() - r.frontier) + r.next->first_position[id];
        best = std::min(best, d);
    }
    return best;
}

std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const track::Snapshot& snap, const std::vector<index::NodeId>& held,
               const WindowMarks& window) {
    std::vector<std::pair<uint64_t, index::NodeId>> out;
    out.reserve(held.size());
    for (index::NodeId id : held) {
        if (window.in_window[id] == window.round) {
            out.emplace_back(window.window_index[id], id);
        } else {
            uint64_t d = next_use(snap, id);
            out.emplace_back(d == UINT64_MAX ? UINT64_MAX : window.size + d, id);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace clairfs::prefetch
