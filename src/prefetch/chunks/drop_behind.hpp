// SPDX-License-Identifier: MIT
// Pages a sequential reader of a chunked file (a TFRecord or tar shard)
// has passed, dropped from the kernel's page cache (FUSE_NOTIFY_INVAL_INODE
// over the range) while the page cache has no room for the chunked files:
// there they would only be reclaimed later, by the reader's own
// allocations, at a CPU cost the job pays (ChunkStore::read_done says when).
// The drops run on a thread of their own, never a FUSE thread: a drop
// waits for any page of its range a READ in flight has locked, and that
// READ for a FUSE thread to answer it.
#pragma once

#include "clairfs/index/index.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace clairfs::prefetch {

class DropBehind {
public:
    // Drops bytes [off, off + size) of a file from the page cache; 0 or -errno.
    using Dropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;

    explicit DropBehind(Dropper drop);
    ~DropBehind(); // stop()
    DropBehind(const DropBehind&) = delete;
    DropBehind& operator=(const DropBehind&) = delete;

    void start();
    // Joins the thread once its drop in hand is done; what is still queued
    // is left (the mount is going, and its pages with it). Idempotent.
    // False if that drop is still stuck after `bound` (0: no bound): it
    // waits for a page a READ the ended session will not answer has
    // locked, until the unmount aborts that READ. The thread is left
    // then, and this object must never be destroyed (as FetchPool::stop).
    bool stop(std::chrono::milliseconds bound = {});
    // On a FUSE thread: queues a range and wakes the thread. A full queue
    // (the thread behind by max_queued ranges) skips it: the kernel
    // reclaims those pages as it would have anyway.
    void queue(index::NodeId id, uint64_t off, uint64_t size);

    // Ranges dropped (or of a file the kernel had no inode for).
    uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

private:
    struct Range {
        index::NodeId id;
        uint64_t off, size;
    };
    static constexpr size_t max_queued = 256;
    void run();

    Dropper drop_;
    std::mutex mu_; // leaf: no drop under it
    std::condition_variable cv_;
    std::vector<Range> queue_;
    std::atomic<bool> stopping_{false}; // set under mu_; read between drops without it
    std::atomic<bool> exited_{false}; // run() returned (sys::join_within)
    std::thread thread_;
    std::atomic<uint64_t> dropped_{0};
};

} // namespace clairfs::prefetch
