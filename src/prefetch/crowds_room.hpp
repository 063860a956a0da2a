// SPDX-License-Identifier: MIT
// The one rule every choice weighed against the page cache's room follows
// (one copy, drop-behind of chunks and of SSD entries): bytes crowd the
// room once they would take more than half of it, and go on crowding it
// until they fit in a third. The gap keeps a set near the line from
// switching at every look (PageRoom looks once a second).
#pragma once

#include <cstdint>

namespace clairfs::prefetch {

// WAS: whether they crowded it at the last look.
constexpr bool crowds_room(bool was, uint64_t bytes, uint64_t room) {
    return was ? bytes > room / 3 : bytes > room / 2;
}

} // namespace clairfs::prefetch
