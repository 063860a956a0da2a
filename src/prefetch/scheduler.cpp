// SPDX-License-Identifier: MIT
// The scheduler thread: turns the tracker's view of where each local rank
// stands into what the RAM tier should hold (the files needed soonest, up to
// the budget: Belady's choice, since the future is known) and prefetches
// what it lacks, soonest first.
#include "clairfs/prefetch/engine.hpp"
#include "active_job.hpp"
#include "clairfs/log.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "clairfs/sys/contained.hpp"
#include "eviction.hpp"
#include "group_uses.hpp"
#include "job_table.hpp"
#include "page_cache.hpp"
#include "peer_homes.hpp"
#include "timeline.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <pthread.h>
#include <sys/stat.h>
#include <utility>

namespace clairfs::prefetch {
namespace {

using namespace std::chrono_literals;

// A round walks up to the budget's worth of the future (tens of
// microseconds per thousand files); on a machine whose cores decode images,
// a few dozen rounds a second keep the window moving without taking a
// noticeable share of them. At ~300 opens/s a round sees a handful of opens.
constexpr auto min_round_gap = 10ms;
// Without opens (the job between epochs, a prefetch finishing) the window
// still moves on.
constexpr auto idle_round = 50ms;

} // namespace

// How many files ahead of the ranks must be on their way in so that no
// open waits: every batch the loaders may have in flight, twice over, and
// enough to keep every fetch thread busy.
// Jobs run side by side; a job's loaders take turns, so the largest of them
// counts.
uint64_t Engine::lead_items(const Jobs& jobs) const {
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
    return lead_files(in_flight, opt_.fetch_threads);
}

namespace {

// The files the jobs open next (the Timeline's order), until the
// budget is spoken for. Built only as far
// as a round looks: most rounds stop at the first files not yet fetched,
// and only a round that must evict walks it to the end.
class Window {
public:
    Window(Timeline& future, std::vector<uint32_t>& in_window, std::vector<uint32_t>& window_index,
           const std::vector<uint32_t>& tier_size, uint64_t budget, uint32_t round)
        : future_(future), in_window_(in_window), window_index_(window_index),
          tier_size_(tier_size), budget_(budget), round_(round) {}

    // Whether the window has an i-th file, extending it as needed.
    bool reach(size_t i) {
        while (ids_.size() <= i && !ended_) step();
        return i < ids_.size();
    }
    void complete() {
        while (!ended_) step();
    }
    index::NodeId operator[](size_t i) const { return ids_[i]; }
    size_t size() const { return ids_.size(); }

private:
    void step() {
        index::NodeId id;
        if (!future_.next(id)) {
            ended_ = true;
            return;
        }
        if (in_window_[id] == round_) return; // another rank or job needs it sooner
        uint32_t size = tier_size_[id];
        if (size == UINT32_MAX) return; // not tiered
        if (used_ + size > budget_) {
            ended_ = true;
            return;
        }
        used_ += size;
        in_window_[id] = round_;
        window_index_[id] = static_cast<uint32_t>(ids_.size());
        ids_.push_back(id);
    }

    Timeline& future_;
    std::vector<uint32_t>& in_window_;
    std::vector<uint32_t>& window_index_;
    const std::vector<uint32_t>& tier_size_;
    uint64_t budget_;
    uint32_t round_;
    uint64_t used_ = 0;
    bool ended_ = false;
    std::vector<index::NodeId> ids_;
};

} // namespace

// A round can change what is held only when the ranks have moved on (files
// fall out of the window behind them, new ones enter ahead) or, if the last
// round filled the prefetch queue before the window, when a fetch landed.
// Skipping the rest keeps the scheduler's CPU in proportion to the opens,
// not to the size of the window times the wake-ups.
bool Engine::round_due(const Jobs& jobs) {
    if (&jobs != jobs_seen_) { // jobs came or went
        jobs_seen_ = &jobs;
        ran_ = false;
    }
    if (!ran_) return true;
    if (wanted_more_ && landed_.load(std::memory_order_acquire) != last_landed_) return true;
    return matched_opens_.load(std::memory_order_relaxed) - last_opens_ >= round_step();
}

// Opens between rounds: a sixteenth of the lead the window aims at.
uint64_t Engine::round_step() const {
    return std::max<uint64_t>(1, lead_target_ / 16);
}

void Engine::schedule_loop() {
    pthread_setname_np(pthread_self(), "clairfs-sched");
    std::unique_lock lk(wake_mu_);
    while (!stopping_) {
        wake_cv_.wait_for(lk, idle_round, [this] { return wake_ || stopping_; });
        if (stopping_) break;
        if (wake_) wakeups_.fetch_add(1, std::memory_order_relaxed); // else the idle tick
        wake_ = false;
        if (force_round_) {
            force_round_ = false;
            ran_ = false;
        }
        lk.unlock();
        auto jobs = this->jobs();
        // A round that fails ends the predictions (the mount serves on as
        // if unregistered); retrying it every few milliseconds would only
        // flood the log with the same failure.
        auto why = sys::contained("a prefetch round", [&] {
            table_->retire_exited();
            page_->push_landed();
            if (jobs->empty()) page_->jobs_gone(); // a job registered later drops anew
            // holding() before the placements: check_agreement() queues
            // them before it lifts the hold.
            const bool hold = group_->holding();
            if (group_->on() && !hold) group_->place_due_homes();
            // Samples as byte ranges: every wake-up, since a READ told is
            // rare once the samples due are pushed, and each one matters.
            if (table_->range_loaders() != 0 && !hold)
                ranges_round(*jobs);
            if (!jobs->empty() && !hold && round_due(*jobs)) {
                schedule_round(*jobs);
                // The open that makes the next round due wakes it.
                round_at_.store(last_opens_ + round_step(), std::memory_order_relaxed);
            }
            if (page_->drops_reads())
                page_->drop_reads(!jobs->empty() && mode() == track::Mode::clairvoyant);
            page_->weigh_room();
        });
        if (!why.empty())
            for (const auto& j : *jobs)
                for (auto& l : j->loaders)
                    l.tracker->abandon("prefetching failed inside clairfs (" + why + ")");
        // The rest between rounds, cut short only to push files that
        // landed for a push (--opens fanotify): a file due within reach
        // that lands now would otherwise wait out the rest, and its open,
        // with no OPEN to push at, may come first (a READ then). Likewise
        // a ranges job's reader at the edge of what was pushed: it reads
        // pushed samples faster than a rest lasts.
        const auto rest_until = std::chrono::steady_clock::now() + min_round_gap;
        lk.lock();
        while (wake_cv_.wait_until(lk, rest_until, [this] {
            return push_waiting_ || ranges_waiting_ || stopping_;
        })) {
            if (stopping_) break;
            bool files = std::exchange(push_waiting_, false);
            bool ranges = std::exchange(ranges_waiting_, false);
            lk.unlock();
            if (files)
                if (auto failed =
                        sys::contained("a push of landed files", [&] { page_->push_landed(); });
                    !failed.empty())
                    LOG_WARN("pushing landed files failed: %s", failed.c_str());
            if (ranges && !group_->holding()) {
                auto current = this->jobs();
                if (auto failed = sys::contained("a ranges round", [&] { ranges_round(*current); });
                    !failed.empty())
                    LOG_WARN("prefetching samples failed: %s", failed.c_str());
            }
            lk.lock();
        }
    }
}

// Every job's clairvoyant loaders, snapshotted; a loader that fell back is
// left out (it keeps what is cached and is no longer acted on).
void Engine::snapshot_jobs(const Jobs& jobs, std::vector<std::vector<track::Snapshot>>& snaps,
                           std::vector<JobView>& views) {
    snaps.resize(jobs.size());
    views.clear();
    auto now = track::Clock::now();
    for (size_t i = 0; i < jobs.size(); ++i) {
        Active& j = *jobs[i];
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
                    pool_->drop_queued_prefetches();
                }
            } else if (snap.mode == track::Mode::clairvoyant) {
                // Its positions are samples, not files: prefetch_ranges().
                if (!l.ranges) view.push_back(&snap);
            } else if (!l.fallback_logged->exchange(true)) {
                LOG_WARN("job %s, loader '%s': prediction abandoned, caching on first touch "
                         "from now on: %s",
                         j.id.c_str(), l.job->root.c_str(), snap.reason.c_str());
                pool_->drop_queued_prefetches();
            }
        }
        if (!view.empty()) views.push_back(std::move(view));
    }
}

void Engine::schedule_round(const Jobs& jobs) {
    // Read before the snapshot: an open or a landing after these loads is
    // seen by the next round at the latest.
    last_opens_ = matched_opens_.load(std::memory_order_relaxed);
    last_landed_ = landed_.load(std::memory_order_acquire);
    ran_ = true;
    wanted_more_ = false;

    std::vector<std::vector<track::Snapshot>> snaps;
    std::vector<JobView> views;
    snapshot_jobs(jobs, snaps, views);
    if (views.empty()) {
        lead_.store(0, std::memory_order_relaxed);
        return;
    }
    prefetch_shard_heads(views);
    Timeline future(views);
    uint32_t round = ++round_;
    if (round == 0) { // wrapped: stale stamps could alias the new round
        std::fill(in_window_.begin(), in_window_.end(), 0);
        round = round_ = 1;
    }
    lead_target_ = lead_items(jobs);

    // Prefetch in window order. Into free room always; by evicting only
    // within the lead that hides the backing store's latency, and then only
    // files needed later than the one fetched (Belady's choice, and never a
    // fetch that costs more reads than it saves). Files used this epoch and
    // not again before the next are the first to go, but only when room is
    // needed: while memory lasts they may still save a read next epoch.
    cache::TierStats ram = ram_.stats();
    Window window(future, in_window_, window_index_, tier_size_, ram.capacity, round);
    int64_t free = static_cast<int64_t>(ram.capacity) - static_cast<int64_t>(ram.bytes);
    // With peers, while the group's RAM holds the dataset, room the files
    // homed here will take is not free for files from elsewhere
    // (Engine::admit() would not keep them).
    auto homes = group_->homes();
    const int64_t reserved = homes ? static_cast<int64_t>(group_->reserved(*homes)) : 0;
    std::vector<std::pair<uint64_t, index::NodeId>> victims; // built on first need
    bool victims_built = false;
    uint64_t lead = 0;
    bool ready = true;
    for (size_t i = 0; window.reach(i); ++i) {
        index::NodeId id = window[i];
        // A fetch is busy until its bytes are admitted, so asking the tier,
        // then the pool, then the tier again cannot miss one that lands
        // meanwhile and read the file twice.
        bool have = ram_.contains(id);
        bool busy = !have && pool_->busy(id);
        if (!have && !busy) have = ram_.contains(id);
        if (ready && have)
            ++lead;
        else
            ready = false;
        auto size = static_cast<int64_t>(tier_size_[id]);
        if (busy) free -= size; // on its way in
        if (have || busy) continue;
        const int64_t need = size + (!homes || homes->here[id] ? 0 : reserved);
        if (free < need) {
            if (!victims_built) {
                window.complete();
                std::vector<index::NodeId> held;
                ram_.held(held);
                // The window has walked `future` to its end; eviction asks
                // it only where each file is next due, which it still knows.
                // Pinned files (homed here, for the group) are never victims.
                // Short of that, a file homed here is due when any node
                // needs it next.
                GroupDue group;
                if (homes && homes->pin)
                    std::erase_if(held, [&](index::NodeId h) { return homes->here[h] != 0; });
                else if (homes)
                    group = group_->group_next_use(*homes, jobs, snaps);
                victims = eviction_order(future, held,
                                         WindowMarks{in_window_, window_index_, round, window.size()},
                                         group);
                victims_built = true;
            }
            // Within the lead, any file needed later than this one may go;
            // beyond it only files never needed again, which cannot cost a
            // read. Evicting files that are merely needed later than the
            // whole window, this early, reads more: a file the ranks are
            // about to consume would have been the better victim by the
            // time the fetched one is needed (1364 reads against 1159 in
            // the 30% torch test).
            uint64_t keep_upto = evict_beyond(i, lead_target_);
            while (free < need && !victims.empty() && victims.back().first > keep_upto) {
                index::NodeId v = victims.back().second;
                uint64_t freed = page_->evict(v);
                if (homes && homes->here[v]) group_->let_go(freed);
                free += static_cast<int64_t>(freed);
                victims.pop_back();
            }
            if (free < need) break;
        }
        // A stage-in fetch may have landed since the look above.
        if (!pool_->prefetch(id, [&] { return ram_.contains(id); })) { // the queue is full
            wanted_more_ = true;
            refill_wanted_.store(true, std::memory_order_relaxed);
            break;
        }
        free -= size;
    }
    lead_.store(lead, std::memory_order_relaxed);

    // The files due within the loaders' reach go into the kernel's page
    // cache before they are opened: the open then finds every page there
    // (keep_cache) and the job's read never waits on a round trip to the
    // daemon. Only that far ahead, so the pages are still there when the
    // file is opened and the page cache never holds a second copy of the
    // whole budget.
    if (page_->pushes_ahead()) {
        std::vector<index::NodeId> next;
        size_t reach = std::min<size_t>(lead, lead_target_ / 2);
        for (size_t i = 0; i < reach; ++i) next.push_back(window[i]);
        page_->push_ahead(next);
    }
}

} // namespace clairfs::prefetch
