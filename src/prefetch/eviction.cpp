// SPDX-License-Identifier: MIT
#include "eviction.hpp"

#include <algorithm>

namespace clairfs::prefetch {

uint64_t next_use(const track::Snapshot& snap, index::NodeId id) {
    return Timeline(snap).next_use(id);
}

std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const Timeline& future, const std::vector<index::NodeId>& held,
               const WindowMarks& window) {
    std::vector<std::pair<uint64_t, index::NodeId>> out;
    out.reserve(held.size());
    for (index::NodeId id : held) {
        if (window.in_window[id] == window.round) {
            out.emplace_back(window.window_index[id], id);
        } else {
            uint64_t d = future.next_use(id);
            out.emplace_back(d == UINT64_MAX ? UINT64_MAX : window.size + d, id);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const track::Snapshot& snap, const std::vector<index::NodeId>& held,
               const WindowMarks& window) {
    return eviction_order(Timeline(snap), held, window);
}

} // namespace clairfs::prefetch
