// SPDX-License-Identifier: MIT
// One scheduler round: how far ahead the ranks need files (the lead), then
// each file of the window in the order it is due: fit it into free room or
// make room by evicting a file due later, then queue its prefetch.
#include "active_job.hpp"
#include "clairfs/log.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "eviction.hpp"
#include "group_uses.hpp"
#include "kernel_files.hpp"
#include "page_cache.hpp"
#include "peer_homes.hpp"
#include "room.hpp"
#include "scheduler.hpp"
#include "window.hpp"

#include <algorithm>

namespace clairfs::prefetch {

// Every job's clairvoyant loaders, snapshotted; a loader that fell back is
// left out (it keeps what is cached and is no longer acted on).
void snapshot_jobs(const Jobs& jobs, FetchPool& pool, std::vector<std::vector<track::Snapshot>>& snaps,
                   std::vector<JobView>& views) {
    snaps.resize(jobs.size());
    views.clear();
    auto now = track::Clock::now();
    for (size_t i = 0; i < jobs.size(); ++i) {
        ActiveJob& j = *jobs[i];
        snaps[i].clear();
        snaps[i].reserve(j.loaders.size());
        JobView view;
        for (LoaderRun& l : j.loaders) {
            snaps[i].push_back(l.tracker->snapshot(now));
            const track::Snapshot& snap = snaps[i].back();
            if (snap.mode == track::Mode::clairvoyant && snap.deep_searching) {
                // Its order is known to be wrong until the search ends:
                // what was queued for it goes, and nothing more is asked.
                if (!l.deep_logged->exchange(true)) {
                    LOG_INFO("job %s, loader '%s': its opens fit no predicted order; searching "
                             "the global generator's chain, not prefetching meanwhile",
                             j.id.c_str(), l.job->root.c_str());
                    pool.drop_queued_prefetches();
                }
            } else if (snap.mode == track::Mode::clairvoyant) {
                // Its positions are samples, not files: prefetch_ranges().
                if (!l.ranges) view.push_back(&snap);
            } else if (!l.fallback_logged->exchange(true)) {
                LOG_WARN("job %s, loader '%s': prediction abandoned, caching on first touch "
                         "from now on: %s",
                         j.id.c_str(), l.job->root.c_str(), snap.reason.c_str());
                pool.drop_queued_prefetches();
            }
        }
        if (!view.empty()) views.push_back(std::move(view));
    }
}

// How many files ahead of the ranks must be on their way in so that no
// open waits: every batch the loaders may have in flight, twice over, and
// enough to keep every fetch thread busy.
// Jobs run side by side; a job's loaders take turns, so the largest of them
// counts.
uint64_t Scheduler::lead_items(const Jobs& jobs) const {
    uint64_t in_flight = 0;
    for (const auto& j : jobs) {
        uint64_t most = 0;
        for (const LoaderRun& l : j->loaders) {
            const order::JobSpec& s = l.job->spec;
            most = std::max(most, loader_in_flight(s.num_workers, s.prefetch_factor,
                                                   s.batch_size, l.job->ranks.size()));
        }
        in_flight += most;
    }
    return lead_files(in_flight, parts_.opt.fetch_threads);
}

uint32_t Scheduler::next_round() {
    if (++round_ == 0) { // wrapped: stale stamps could alias the new round
        std::fill(in_window_.begin(), in_window_.end(), 0);
        round_ = 1;
    }
    return round_;
}

bool Scheduler::queue(index::NodeId id) {
    // A stage-in fetch may have landed since the round looked.
    if (pool_->prefetch(id, [&] { return parts_.ram.contains(id); })) return true;
    wanted_more_ = true;
    refill_wanted_.store(true, std::memory_order_relaxed);
    return false;
}

void Scheduler::begin_round() {
    // Read before the snapshot: an open or a landing after these loads is
    // seen by the next round at the latest.
    last_opens_ = matched_opens_.load(std::memory_order_relaxed);
    last_landed_ = landed_.load(std::memory_order_acquire);
    ran_ = true;
    wanted_more_ = false;
}

void Scheduler::round(const Jobs& jobs) {
    begin_round();
    std::vector<std::vector<track::Snapshot>> snaps;
    std::vector<JobView> views;
    snapshot_jobs(jobs, *pool_, snaps, views);
    if (views.empty()) {
        lead_.store(0, std::memory_order_relaxed);
        return;
    }
    calls_.shard_heads(views);
    Timeline future(views);
    const uint32_t round = next_round();
    lead_target_ = lead_items(jobs);

    const cache::TierStats held = parts_.ram.stats();
    Window window(future, in_window_, window_index_, parts_.tier_size, held.capacity, round);
    auto homes = parts_.group.homes();
    Room room(held.capacity, held.bytes, homes.get(), homes ? parts_.group.reserved(*homes) : 0);
    Victims victims([&] { return victim_order(future, window, homes.get(), jobs, snaps); },
                    [&](index::NodeId v) { return evict(v, homes.get()); });
    const uint64_t lead = fill(window, room, victims);
    lead_.store(lead, std::memory_order_relaxed);
    push_ahead(window, lead);
}

// Prefetch in window order. Into free room always; by evicting only within
// the lead that hides the backing store's latency, and then only files
// needed later than the one fetched (Belady's choice, and never a fetch
// that costs more reads than it saves). Files used this epoch and not again
// before the next are the first to go, but only when room is needed: while
// memory lasts they may still save a read next epoch. Returns the lead:
// the files held from the window's start on.
uint64_t Scheduler::fill(Window& window, Room& room, Victims& victims) {
    cache::RamTier& ram = parts_.ram;
    uint64_t lead = 0;
    for (size_t i = 0; window.reach(i); ++i) {
        const index::NodeId id = window[i];
        // A fetch is busy until its bytes are admitted, so asking the tier,
        // then the pool, then the tier again cannot miss one that lands
        // meanwhile and read the file twice.
        // A file the kernel reads from its SSD entry itself is held too:
        // it needs no room here (KernelFiles).
        bool have = ram.contains(id) || parts_.kernel.reads(id);
        const bool busy = !have && pool_->busy(id);
        if (!have && !busy) have = ram.contains(id) || parts_.kernel.reads(id);
        if (have && lead == i) ++lead;
        const uint32_t size = parts_.tier_size[id];
        if (busy) room.take(size); // on its way in
        if (have || busy) continue;
        // Within the lead, any file needed later than this one may go;
        // beyond it only files never needed again, which cannot cost a
        // read. Evicting files that are merely needed later than the whole
        // window, this early, reads more: a file the ranks are about to
        // consume would have been the better victim by the time the
        // fetched one is needed (1364 reads against 1159 in the 30% torch
        // test).
        const int64_t need = room.need(id, size);
        if (!room.has(need) && !victims.make_room(room, need, evict_beyond(i, lead_target_)))
            break;
        if (!queue(id)) break; // the queue is full
        room.take(size);
    }
    return lead;
}

// The window walked to its end: eviction asks it only where each file is
// next due, which it still knows. Pinned files (homed here, for the group)
// are never victims. Short of that, a file homed here is due when any node
// needs it next.
Victims::Order Scheduler::victim_order(const Timeline& future, Window& window, const Homes* homes,
                                       const Jobs& jobs,
                                       const std::vector<std::vector<track::Snapshot>>& snaps) {
    window.complete();
    std::vector<index::NodeId> held;
    parts_.ram.held(held);
    GroupDue group_due;
    if (homes && homes->pin)
        std::erase_if(held, [&](index::NodeId h) { return homes->here[h] != 0; });
    else if (homes)
        group_due = parts_.group.group_next_use(*homes, jobs, snaps);
    return eviction_order(future, held,
                          WindowMarks{in_window_, window_index_, window.round(), window.size()},
                          group_due);
}

uint64_t Scheduler::evict(index::NodeId id, const Homes* homes) {
    uint64_t freed = parts_.page.evict(id);
    if (homes && homes->here[id]) parts_.group.let_go(freed);
    return freed;
}

// The files due within the loaders' reach go into the kernel's page cache
// before they are opened: the open then finds every page there
// (keep_cache) and the job's read never waits on a round trip to the
// daemon. Only that far ahead, so the pages are still there when the file
// is opened and the page cache never holds a second copy of the whole
// budget.
//
// The same reach for the SSD entries the kernel reads itself under
// --ssd-check once: the kernel reads each into the page cache then
// (KernelFiles::read_ahead), so the job's read does not wait on the disk.
void Scheduler::push_ahead(const Window& window, uint64_t lead) {
    const size_t reach = std::min<size_t>(lead, lead_target_ / 2);
    std::vector<index::NodeId> next;
    if (parts_.kernel.reads_ahead()) {
        for (size_t i = 0; i < reach; ++i)
            if (parts_.kernel.reads(window[i])) next.push_back(window[i]);
        parts_.kernel.read_ahead(next);
        next.clear();
    }
    if (!parts_.page.pushes_ahead()) return;
    for (size_t i = 0; i < reach; ++i) next.push_back(window[i]);
    parts_.page.push_ahead(next);
}

} // namespace clairfs::prefetch
