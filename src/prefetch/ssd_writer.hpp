// SPDX-License-Identifier: MIT
// Copies files fetched from the backing store into the SSD tier on a thread
// of its own, so that a reader waiting for a fetch never also waits for the
// SSD write. Pending writes hold references to bytes that are usually in the
// RAM tier anyway; the byte bound caps what they can pin beyond it.
#pragma once

#include "clairfs/cache/tier.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace clairfs::prefetch {

struct SsdWriterStats {
    uint64_t written = 0;       // files the tier took
    uint64_t refused = 0;       // files the tier refused (full, or disabled by an error)
    uint64_t skipped = 0;       // not queued: the queue's byte bound was reached
    uint64_t pending_bytes = 0; // queued or being written now
};

class SsdWriter;

// Room left in `tier` for a stage-in pass, counting what the pass has
// already sent for (`planned`: the tier's bytes when it began plus every
// file or chunk queued since) and the writer's pending bytes as taken, so
// a pass never fetches more than will fit.
uint64_t stage_room(const cache::Tier& tier, const SsdWriter* writer, uint64_t planned);

class SsdWriter {
public:
    SsdWriter(cache::Tier& ssd, uint64_t max_pending_bytes);
    // Writes what is queued, then joins: a clean unmount leaves on the SSD
    // everything it was asked to keep, for the next mount to reuse.
    ~SsdWriter();
    // Writes what is queued and joins the thread, waiting at most `bound`
    // (0: as long as it takes). False if a write is stuck on a hung device
    // after that: the writer must then never be destroyed.
    bool stop(std::chrono::milliseconds bound);
    SsdWriter(const SsdWriter&) = delete;
    SsdWriter& operator=(const SsdWriter&) = delete;
    void start();

    // Queues the file unless it is queued already or the queue is full.
    bool enqueue(index::NodeId id, cache::BlobRef blob);
    // Whether the file is queued or being written.
    bool pending(index::NodeId id) const;
    // The bytes of a file queued or being written, or nullptr: a fetch of a
    // file on its way to the SSD takes them instead of reading it again.
    cache::BlobRef peek(index::NodeId id) const;
    SsdWriterStats stats() const;

private:
    void run();

    cache::Tier& ssd_;
    uint64_t max_pending_;
    mutable std::mutex mu_; // leaf lock; never held across a write
    std::condition_variable cv_;
    std::deque<std::pair<index::NodeId, cache::BlobRef>> queue_;
    std::unordered_map<index::NodeId, cache::BlobRef> pending_;
    SsdWriterStats stats_;
    bool stopping_ = false;
    bool exited_ = false; // run() has returned; stop() waits on cv_ for it
    std::thread thread_;
};

} // namespace clairfs::prefetch
