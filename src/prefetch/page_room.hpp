// SPDX-License-Identifier: MIT
// The room the kernel's page cache has (the memory this process may use
// less what reclaim cannot free, config/memory_budget.hpp), weighed at most
// once a second from files in /proc and /sys. It decides automatic one copy
// (OneCopy::weigh), whether a sequential reader's pages of files held by
// chunk are dropped behind it (drop-behind, ChunkStore::set_drop_behind),
// and whether the SSD entries the kernel reads leave the page cache at
// their last close (KernelFiles::set_drop_behind).
#pragma once

#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/config/mount_choices.hpp"
#include "one_copy.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace clairfs::prefetch {

class ChunkStore;
class KernelFiles;

class PageRoom {
public:
    using Probe = std::function<uint64_t()>;
    explicit PageRoom(config::When drop_behind) : drop_behind_(drop_behind) {}
    // config::page_cache_room() unless set (a unit test sets its own).
    void set_probe(Probe probe) { probe_ = std::move(probe); }
    // The files held by chunk; null if none.
    void set_chunks(ChunkStore* chunks) { chunks_ = chunks; }
    // The SSD entries the kernel reads; null if none.
    void set_kernel_files(KernelFiles* kernel) { kernel_ = kernel; }
    // Scheduler thread: weighs the room if a second passed since the last
    // look and some choice is automatic, and makes those choices.
    void weigh(OneCopy& one_copy, const cache::RamTier& ram);
    // As last weighed; UINT64_MAX: unknown.
    uint64_t room() const { return room_.load(std::memory_order_relaxed); }

private:
    void weigh_chunks(uint64_t room);
    void weigh_entries(uint64_t room);

    const config::When drop_behind_;
    ChunkStore* chunks_ = nullptr;
    KernelFiles* kernel_ = nullptr;
    Probe probe_;
    std::atomic<uint64_t> room_{UINT64_MAX};
    std::chrono::steady_clock::time_point at_{}; // scheduler thread only
};

} // namespace clairfs::prefetch
