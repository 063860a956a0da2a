// SPDX-License-Identifier: MIT
#include "page_room.hpp"

#include "clairfs/config/memory_budget.hpp"
#include "clairfs/log.hpp"
#include "clairfs/prefetch/chunk_store.hpp"
#include "crowds_room.hpp"
#include "kernel_files.hpp"

namespace clairfs::prefetch {

void PageRoom::weigh(OneCopy& one_copy, const cache::RamTier& ram) {
    const bool copies = one_copy.automatic();
    const bool chunked =
        chunks_ && chunks_->can_drop_behind() && drop_behind_ == config::When::automatic;
    const bool entries = kernel_ && kernel_->on() && drop_behind_ == config::When::automatic;
    if (!copies && !chunked && !entries) return;
    auto now = std::chrono::steady_clock::now();
    if (now - at_ < std::chrono::seconds(1)) return;
    at_ = now;
    const uint64_t room = probe_ ? probe_() : config::page_cache_room();
    room_.store(room, std::memory_order_relaxed);
    if (room == UINT64_MAX) return; // unknown: as it was
    if (chunked) weigh_chunks(room);
    if (entries) weigh_entries(room);
    if (copies) one_copy.weigh(ram.stats().bytes, room);
}

// Drop-behind for chunked files: a file read from start to end (a shard)
// leaves its pages in the page cache, and where the chunked files do not
// fit in its room they only push out one another, and the job's memory,
// before the next epoch reads them (the shards' order is new each epoch).
// The kernel reclaims them then by the reader's own allocations, at a CPU
// cost the job pays, which dropping them once passed saves
// (bench/RESULTS.md, 20261127-1204-tfrecord-drop-behind). Where they fit,
// they stay: the next epoch then reads them from the page cache
// (crowds_room, as for one copy).
void PageRoom::weigh_chunks(uint64_t room) {
    const uint64_t bytes = chunks_->map().bytes();
    const bool was = chunks_->drop_behind();
    const bool now_on = crowds_room(was, bytes, room);
    if (now_on == was) return;
    chunks_->set_drop_behind(now_on);
    LOG_INFO("drop-behind %s: files held by chunk take %.0f MiB, the page cache has room for "
             "%.0f MiB%s",
             now_on ? "on" : "off", bytes / 1048576.0, room / 1048576.0,
             now_on ? "; a sequential reader's pages leave it once passed" : "");
}

// The same for the SSD entries the kernel reads (KernelFiles::closed): where
// they all fit, their pages stay and a later epoch opens them with no read
// at all; where they do not, the pages of an entry just read only push out
// the ones the prefetch brought in for the files due next, so they go at
// the last close. Same thresholds as above.
void PageRoom::weigh_entries(uint64_t room) {
    const uint64_t bytes = kernel_->bytes();
    const bool was = kernel_->drop_behind();
    const bool now_on = crowds_room(was, bytes, room);
    if (now_on == was) return;
    kernel_->set_drop_behind(now_on);
    LOG_INFO("ssd drop-behind %s: the SSD entries the kernel reads take %.0f MiB, the page cache "
             "has room for %.0f MiB%s",
             now_on ? "on" : "off", bytes / 1048576.0, room / 1048576.0,
             now_on ? "; an entry's pages leave it at the last close" : "");
}

} // namespace clairfs::prefetch
