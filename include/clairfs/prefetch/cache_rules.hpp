// SPDX-License-Identifier: MIT
// The prefetch scheduler's rules as pure functions of numbers: how far
// ahead it fetches, which held file may make room for a fetch, when a file
// is due, where a file's home is and whether homes keep their files for
// good. The daemon (scheduler.cpp, engine.cpp) and `clairfs simulate` call
// the same functions, so the simulator's decisions are the daemon's.
#pragma once

#include <algorithm>
#include <cstdint>

namespace clairfs::prefetch {

// How many files ahead of the ranks must be on their way in so that no
// open waits: every batch the loaders may have in flight (`in_flight`
// files, summed over jobs), twice over, and enough to keep every fetch
// thread busy.
inline uint64_t lead_files(uint64_t in_flight, unsigned fetch_threads) {
    return std::max<uint64_t>(2 * in_flight, 4 * uint64_t{fetch_threads});
}

// The files one loader of one job may have in flight on this node:
// prefetch_factor batches per worker (one batch without workers), for each
// of its local ranks.
inline uint64_t loader_in_flight(uint32_t workers, uint32_t prefetch_factor, uint32_t batch_size,
                                 uint64_t local_ranks) {
    return uint64_t{workers == 0 ? 1u : workers * prefetch_factor} * batch_size * local_ranks;
}

// A fetch at window index `i` may evict held files due later than the
// returned index. Within the lead, any file needed later than this one may
// go; beyond it only files never needed again (due UINT64_MAX), which
// cannot cost a read.
inline uint64_t evict_beyond(uint64_t i, uint64_t lead) {
    return i < lead ? i : UINT64_MAX - 1;
}

// When a held file is due, as eviction ranks it: its window index if it is
// in the window, else window_size + next_use (UINT64_MAX: never again);
// with peers, the earlier of that and when any node of the group next
// needs it (`group`, UINT64_MAX if not homed here).
inline uint64_t due_of(bool in_window, uint64_t window_index, uint64_t window_size,
                       uint64_t next_use, uint64_t group = UINT64_MAX) {
    uint64_t d = in_window ? window_index
                 : next_use == UINT64_MAX ? UINT64_MAX
                                          : window_size + next_use;
    return std::min(d, group);
}

// Each home keeps its files for good only while every home can: then the
// shared file system is read once per file. Otherwise eviction goes by
// next use alone, as without peers.
inline bool homes_pinned(uint64_t group_mem, uint64_t dataset, uint64_t mem,
                         uint64_t here_bytes) {
    return group_mem >= dataset && mem >= here_bytes;
}

} // namespace clairfs::prefetch
