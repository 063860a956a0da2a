// SPDX-License-Identifier: MIT
#include "eviction.hpp"

#include "clairfs/prefetch/cache_rules.hpp"

#include <algorithm>

namespace clairfs::prefetch {

uint64_t next_use(const track::Snapshot& snap, index::NodeId id) {
    return Timeline(snap).next_use(id);
}

uint64_t due(const Timeline& future, const WindowMarks& window, const GroupDue& group,
             index::NodeId id) {
    const bool in = window.in_window[id] == window.round;
    return due_of(in, in ? window.window_index[id] : 0, window.size,
                  in ? UINT64_MAX : future.next_use(id), group ? group(id) : UINT64_MAX);
}

std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const Timeline& future, const std::vector<index::NodeId>& held,
               const WindowMarks& window, const GroupDue& group) {
    std::vector<std::pair<uint64_t, index::NodeId>> out;
    out.reserve(held.size());
    for (index::NodeId id : held) out.emplace_back(due(future, window, group, id), id);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const track::Snapshot& snap, const std::vector<index::NodeId>& held,
               const WindowMarks& window) {
    return eviction_order(Timeline(snap), held, window);
}

} // namespace clairfs::prefetch
