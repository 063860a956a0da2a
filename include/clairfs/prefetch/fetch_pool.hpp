// SPDX-License-Identifier: MIT
// Threads that read whole files from the backing store. The shared file
// system is latency-bound, so there are more of them than cores. Each file
// is fetched once however many ask: a demand read of a file already being
// fetched waits for that fetch, and demand reads go ahead of every queued
// prefetch.
#pragma once

#include "clairfs/cache/backing_store.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace clairfs::prefetch {

// Where a fetch found the bytes.
enum class Source : uint8_t { backing, ssd, peer };

struct FetchResult {
    int error = 0; // 0 or -errno
    cache::BlobRef blob;
    Source from = Source::backing;
    // False: the bytes serve whoever waits on this fetch and are not kept
    // in the RAM tier (a warmed SSD entry, which the kernel reads itself).
    bool keep = true;
};

struct FetchStats {
    uint64_t demand = 0;     // demand() calls that had to wait for a fetch
    uint64_t joined = 0;     // ... of which found the file already queued or being fetched
    uint64_t prefetched = 0; // prefetches completed
    uint64_t background = 0; // background fetches completed
    uint64_t background_queued = 0;
    uint64_t background_running = 0; // background fetches being read now
    uint64_t stall_ns = 0; // total time demand() callers waited
    uint64_t queued = 0;   // prefetches waiting for a thread now
    uint64_t running = 0;  // fetches being read now
    uint64_t timeouts = 0; // demand() calls that gave up after the wait bound
};

class FetchPool {
public:
    // Runs on the fetching thread after every fetch, success or error, with
    // no lock of the pool held and before demand() waiters return; this is
    // where the caller decides whether a tier keeps the bytes. `demanded`:
    // some demand() caller was waiting for this fetch.
    using Completion = std::function<void(index::NodeId id, const FetchResult& r, bool demanded)>;

    // Reads one whole file, on a pool thread, with no pool lock held.
    // `demanded`: a reader waits for it (peers put such fetches first).
    using Reader = std::function<FetchResult(index::NodeId id, bool demanded)>;

    // `threads` >= 1. At most `max_queued` prefetches, and as many
    // background fetches, wait for a thread; prefetch() and background()
    // beyond that return false. `wait_bound` (0: none) caps how long one
    // demand() waits for its fetch (--io-timeout).
    FetchPool(Reader read, unsigned threads, size_t max_queued, Completion done,
              std::chrono::milliseconds wait_bound = {});
    // Reads straight from the backing store.
    FetchPool(cache::BackingStore& store, unsigned threads, size_t max_queued, Completion done,
              std::chrono::milliseconds wait_bound = {});
    // stop() without a bound: waits for every running fetch.
    ~FetchPool();

    // Drops queued prefetches, lets running fetches finish for at most
    // `bound` (0: as long as they take) and joins the threads. False if some
    // fetch is still stuck in a read after `bound`: its thread cannot be
    // joined, and the pool (with whatever its reader refers to) must then
    // never be destroyed; the daemon exits without it.
    bool stop(std::chrono::milliseconds bound);
    FetchPool(const FetchPool&) = delete;
    FetchPool& operator=(const FetchPool&) = delete;

    // The file's bytes, waiting for them: joins a queued or running fetch of
    // the same file (a queued prefetch is moved ahead of all others), or
    // queues one ahead of every prefetch. The wait counts as stall time.
    // After the wait bound it returns -EIO, leaving the fetch to finish on
    // its own: a read hung in the backing store costs its caller the bound
    // and one fetch thread, never the other readers.
    // `landed`, if given, is asked (with the pool's lock held) before a new
    // fetch is queued: a fetch that finished between the caller's own look
    // at its tier and this call was admitted before it left the pool, so
    // this second look finds it instead of reading the file again.
    FetchResult demand(index::NodeId id, const std::function<cache::BlobRef()>& landed = {});

    // The file's bytes, read on the calling thread with `read` unless a
    // pool thread is reading it already (then its result, as demand()
    // waits for it). A queued fetch of the file is taken off its queue and
    // run here. For a peer's server thread: it must never wait for a pool
    // thread, which may itself be waiting on that peer.
    FetchResult run_here(index::NodeId id, const Reader& read);

    // Queues a prefetch behind the others. False if the file is already
    // queued or being fetched, or the queue is full. `held`, if given, is
    // asked with the pool's lock held before a new fetch is queued, as
    // demand()'s `landed` is: a stage-in fetch that finished since the
    // caller looked at its tier is not read again (true, nothing queued).
    bool prefetch(index::NodeId id, const std::function<bool()>& held = {});

    // Queues a fetch behind every prefetch (stage-in: work for idle
    // threads). False if already queued or being fetched, or that queue is
    // full. A demand or prefetch of the same file moves it up.
    // `held`, if given, is asked with the pool's lock held before queuing,
    // like demand()'s `landed`: true (the file is already where the caller
    // wants it) refuses, so a fetch that finished between the caller's own
    // look and this call is not read a second time.
    bool background(index::NodeId id, const std::function<bool()>& held = {});

    // Whether the file is being fetched, or queued ahead of the background
    // (a file only waiting in the background queue is not busy: prefetch()
    // moves it up).
    bool busy(index::NodeId id) const;

    // Forgets queued prefetches (not running ones, nor demand or background
    // fetches), e.g. when the registration they came from is withdrawn.
    void drop_queued_prefetches();
    // Forgets queued background fetches.
    void drop_background();
    // No background fetch queued or being read: a stage-in whose last
    // fetch has left the queue is not over until that fetch lands (its
    // bytes, or its error, are not counted before).
    bool background_idle() const;

    FetchStats stats() const;

private:
    struct Pending; // one file queued or being fetched, and who waits for it

    void run();
    static FetchResult read_contained(const Reader& read, index::NodeId id, bool demanded);
    void finish(index::NodeId id, Pending& p, FetchResult r);

    Reader read_;
    Completion done_;
    size_t max_queued_;
    std::chrono::milliseconds wait_bound_;
    // Lock order: mu_, then the leaf locks `landed` and `held` take (a tier's,
    // the SSD writer's); never held across a read or `done_`.
    mutable std::mutex mu_;
    std::condition_variable work_cv_;
    std::deque<index::NodeId> demand_queue_;
    std::deque<index::NodeId> prefetch_queue_;
    std::deque<index::NodeId> background_queue_;
    std::unordered_map<index::NodeId, std::shared_ptr<Pending>> pending_;
    FetchStats stats_;
    bool stopping_ = false;
    unsigned waiters_ = 0; // demand() calls inside the pool; the destructor waits them out
    std::condition_variable idle_cv_; // signalled when the last waiter leaves a stopping pool
    unsigned live_ = 0;               // threads not yet out of run(); stop() waits on idle_cv_
    bool stopped_ = false;            // stop() has joined the threads
    std::vector<std::thread> threads_;
};

} // namespace clairfs::prefetch
