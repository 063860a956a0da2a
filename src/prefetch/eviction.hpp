// SPDX-License-Identifier: MIT
// Belady's rule with the future known: when each file falls due next, and
// the order in which the RAM tier gives files up (the one needed farthest
// in the future first). Pure functions of the tracker's snapshot, so they
// can be checked against hand-built plans without an engine or a clock.
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/track/tracker.hpp"
#include "timeline.hpp"

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace clairfs::prefetch {

// Where `id` is next opened by any local rank, counted in positions from
// that rank's frontier (skipping positions already opened out of order);
// UINT64_MAX if in neither epoch the tracker holds.
uint64_t next_use(const track::Snapshot& snap, index::NodeId id);

// The scheduler's window of files worth holding, as per-node stamps: a node
// is in the window if in_window[id] == round, at index window_index[id].
struct WindowMarks {
    const std::vector<uint32_t>& in_window;
    const std::vector<uint32_t>& window_index;
    uint32_t round;
    size_t size;
};

// The next use by any rank of the group of a file homed here, in the
// window's units (files of this node's timeline); UINT64_MAX: none, or the
// file is homed elsewhere. Empty: no group to weigh.
using GroupDue = std::function<uint64_t(index::NodeId)>;

// When `id` is due, as eviction ranks it: its window index, else window
// size + next_use; with `group`, the earlier of that and group(id), so that
// a home keeps what any node needs next. UINT64_MAX: never again.
uint64_t due(const Timeline& future, const WindowMarks& window, const GroupDue& group,
             index::NodeId id);

// `held` ranked for eviction by due(), the first to go last: files never
// used again (UINT64_MAX) at the very end.
std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const Timeline& future, const std::vector<index::NodeId>& held,
               const WindowMarks& window, const GroupDue& group = {});
// The same for one job of one loader.
std::vector<std::pair<uint64_t, index::NodeId>>
eviction_order(const track::Snapshot& snap, const std::vector<index::NodeId>& held,
               const WindowMarks& window);

} // namespace clairfs::prefetch
