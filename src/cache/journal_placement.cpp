// SPDX-License-Identifier: MIT
#include "journal_placement.hpp"

#include <algorithm>

namespace clairfs::cache {

uint64_t place_entries(JournalEntries& entries, ExtentAllocator& extents) {
    auto newer = [](const auto& a, const auto& b) { return a.second.seq > b.second.seq; };
    std::ranges::stable_sort(entries, newer);
    size_t before = entries.size();
    std::erase_if(entries, [&](auto& e) {
        // An empty file takes no extent, so its offset means nothing: no
        // wild value from the journal is kept.
        if (e.second.size == 0) e.second.offset = 0;
        return !extents.reserve(e.second.offset, e.second.size);
    });
    std::ranges::reverse(entries);
    for (size_t i = 0; i < entries.size(); ++i) entries[i].second.seq = i + 1;
    return before - entries.size();
}

} // namespace clairfs::cache
