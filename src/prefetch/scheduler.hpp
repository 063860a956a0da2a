// SPDX-License-Identifier: MIT
// The scheduler thread: turns the trackers' view of where each local rank
// stands into what the RAM tier should hold (the files needed soonest, up
// to the budget: Belady's choice, since the future is known) and
// prefetches what it lacks, soonest first. It owns the round's state, the
// thread, and its wake-ups: opens and landed fetches wake it only when a
// round can change something, so its CPU follows the opens, not the size
// of the window times the wake-ups. Its lock (wake_mu_) is a leaf, and is
// never held over a round.
#pragma once

#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/prefetch/engine_options.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"
#include "clairfs/track/tracker.hpp"
#include "room.hpp"
#include "timeline.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <thread>
#include <vector>

namespace clairfs::prefetch {

struct ActiveJob;
class JobTable;
class PageCache;
class KernelFiles;
class PeerHomes;
class Window;
struct Homes;

using Jobs = std::vector<std::shared_ptr<ActiveJob>>;

// Every job's loaders, snapshotted, into `snaps` (one vector per job) and
// the clairvoyant loaders' views of whole files into `views`. A loader
// that fell back, or whose order is being searched for again, is left out
// of the views (logged once; the prefetches queued for it are dropped).
void snapshot_jobs(const Jobs& jobs, FetchPool& pool, std::vector<std::vector<track::Snapshot>>& snaps,
                   std::vector<JobView>& views);

class Scheduler {
public:
    // What a round reads and acts on: the engine's parts, which outlive it.
    struct Parts {
        const EngineOptions& opt;
        cache::RamTier& ram;
        JobTable& table;
        PageCache& page;
        PeerHomes& group;
        const std::vector<uint32_t>& tier_size; // per node
        KernelFiles& kernel;                    // files the kernel reads from the SSD itself
    };
    // The engine's own work on this thread: samples as byte ranges (every
    // wake-up while a ranges job is registered) and the first chunks of the
    // files held by chunk that open next (each round).
    struct Calls {
        std::function<void(const Jobs& jobs)> ranges_round;
        std::function<void(const std::vector<JobView>& views)> shard_heads;
    };

    Scheduler(size_t nodes, Parts parts, Calls calls);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;
    // Starts the thread; the pool's fetch threads are what it queues on.
    void start(FetchPool& pool);
    // Ends the thread, waiting at most `bound` (0: for ever) for a round
    // stuck in a page-cache push or drop: false if it still is.
    bool stop_within(std::chrono::milliseconds bound);

    // --- told by the engine, on any thread; none of them blocks ----------
    // The jobs changed: run a round.
    void wake();
    // An open a job's tracker matched (`new_epoch`: the first of an
    // epoch): wakes a round only when one is due.
    void matched_open(bool new_epoch);
    // A ranges job's READ was told: push on at once, even in the rest
    // between rounds (the reader is at the edge of what was pushed).
    void matched_range_read();
    // A fetch landed in the tiers (`for_push`: for a push into the page
    // cache, which should not wait out the rest between rounds).
    void landed(bool for_push);
    // The peers' hold ended, or homes are due: run a full round.
    void force_round();

    // The status keys prefetch.lead and prefetch.scheduler_wakeups.
    void status(nlohmann::json& prefetch) const;

private:
    void loop();
    // One wake-up's work, with the job list of that moment.
    void wake_up(const Jobs& jobs);
    // The rest between rounds, cut short for pushes and ranges reads.
    void rest(std::unique_lock<std::mutex>& lk);
    bool round_due(const Jobs& jobs);
    uint64_t round_step() const;
    uint64_t lead_items(const Jobs& jobs) const;
    void round(const Jobs& jobs);
    void begin_round();
    uint64_t fill(Window& window, Room& room, Victims& victims);
    Victims::Order victim_order(const Timeline& future, Window& window, const Homes* homes,
                                const Jobs& jobs,
                                const std::vector<std::vector<track::Snapshot>>& snaps);
    // Evicts `id` from RAM (and the page cache's copy with it): the bytes freed.
    uint64_t evict(index::NodeId id, const Homes* homes);
    // A new round's number; stamps start over when it wraps.
    uint32_t next_round();
    // Queues `id` for prefetch: false if the queue is full (the round stops
    // there and a landing fetch wakes the next).
    bool queue(index::NodeId id);
    // The files due within the loaders' reach, into the page cache ahead.
    void push_ahead(const Window& window, uint64_t lead);

    Parts parts_;
    Calls calls_;
    FetchPool* pool_ = nullptr;

    // The round's own state, touched by the scheduler thread alone. Per
    // node: the round in which it last fell inside the window of files
    // worth holding, and where.
    std::vector<uint32_t> in_window_;
    std::vector<uint32_t> window_index_; // valid where in_window_ is this round
    uint32_t round_ = 0;
    const Jobs* jobs_seen_ = nullptr; // the job list of the last round
    // What the last round saw, to tell whether the next one can change
    // anything (round_due).
    bool ran_ = false;
    bool wanted_more_ = false; // the prefetch queue filled before the window did
    uint64_t last_opens_ = 0;
    uint64_t last_landed_ = 0;
    uint64_t lead_target_ = 0; // lead_items() of the last round

    std::mutex wake_mu_; // leaf lock
    std::condition_variable wake_cv_;
    bool wake_ = false;
    bool push_waiting_ = false;   // files landed for a push
    bool ranges_waiting_ = false; // a ranges job's READ was told
    bool stopping_ = false;
    bool force_round_ = false;

    std::atomic<uint64_t> lead_{0}; // samples ready ahead of the slowest rank
    // A round only runs when the ranks moved on enough to change what the
    // window holds, or when a round that could not queue everything it
    // wanted sees a fetch land.
    std::atomic<uint64_t> matched_opens_{0};
    std::atomic<uint64_t> landed_{0};
    // The matched-open count at which the next round is due, and whether
    // the last round wants to be woken by the next fetch that lands.
    std::atomic<uint64_t> round_at_{0};
    std::atomic<bool> refill_wanted_{false};
    std::atomic<uint64_t> wakeups_{0}; // not counting the idle ticks

    std::thread thread_;
    std::atomic<bool> done_{false}; // loop() returned (stop_within)
};

} // namespace clairfs::prefetch
