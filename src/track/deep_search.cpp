// SPDX-License-Identifier: MIT
// The deep chain search (order/chain_scan.hpp), run by the planner thread
// in slices. It takes seconds, not milliseconds, so unlike resync.cpp's
// search no open waits for it: the family's opens are held (neither
// matched nor missed), the prediction is not acted on (no prefetch of an
// order known to be wrong), and once the seed is found the held opens are
// matched again in order, which puts every worker's cursor where the job
// now stands.
#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/track/tracker.hpp"

#include <cerrno>
#include <cstring>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

namespace clairfs::track {
namespace {

// Opens held at most while the search runs: a job reads thousands of
// files a second from page cache; past this the search goes on but the
// rest of its family's opens are judged as misses.
constexpr size_t max_held = size_t{1} << 20;

// The search yields the CPU to the job's own loaders where the scheduler
// compares threads; under autogroup (sessions share the CPU as groups) it
// does not, and TrackerOptions::deep_share is what bounds it.
constexpr int deep_nice = 10;

double thread_cpu_s() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void set_thread_nice(int nice) {
    // Lowering a thread's nice value again needs CAP_SYS_NICE (or
    // RLIMIT_NICE): without it the planner thread stays at deep_nice,
    // where its epoch builds (milliseconds each) still run.
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0 && nice == 0)
        LOG_INFO("the seed search's thread keeps nice %d (%s)", deep_nice, strerror(errno));
}

} // namespace

// Under mu_, from run_resync: the evidence a failed search had.
bool Tracker::begin_deep(uint32_t family, size_t slot, Evidence ev) {
    if (deep_ || deep_done_.tried || opt_.deep_last <= opt_.resync_max || !ranks_[slot].resync)
        return false;
    deep_done_.tried = true;
    auto d = std::make_unique<DeepSearch>();
    d->family = family;
    d->slot = slot;
    d->req = resync_request(ranks_[slot], ev);
    d->redo_current = redo_current(ranks_[slot], ev);
    d->req.deep_slice = opt_.deep_slice;
    d->req.deep_last = opt_.deep_last;
    for (const auto& [node, pid] : ev.opens) d->seen.insert(node);
    d->held = std::move(ev);
    d->held.queued = false;
    deep_ = std::move(d);
    set_thread_nice(deep_nice);
    plan_cv_.notify_one();
    return true;
}

// Under mu_. True if the open is held for the search under way.
bool Tracker::hold_for_deep(index::NodeId node, uint32_t pid, uint32_t family) {
    if (!deep_ || deep_->family != family) return false;
    if (deep_->held.opens.size() >= max_held) return false;
    if (deep_->seen.insert(node).second) deep_->held.opens.emplace_back(node, pid);
    return true;
}

// Planner thread, lk held on entry and exit: one slice.
void Tracker::run_deep_slice(std::unique_lock<std::mutex>& lk) {
    DeepSearch& d = *deep_;
    Rank& r = ranks_[d.slot];
    const plan::ResyncRequest req = d.req;
    const bool redo = d.redo_current;
    if (mode_.load(std::memory_order_relaxed) != Mode::clairvoyant) {
        plan::ResyncResult gave_up;
        gave_up.tried = "stopped: the prediction was given up meanwhile";
        return finish_deep(gave_up);
    }
    plan::ResyncResult res;
    std::shared_ptr<const plan::EpochPlan> first, second;
    lk.unlock();
    // As in resync_slot: only this thread calls the rank's source and search.
    double start = thread_cpu_s();
    std::string failed = sys::contained("searching the global generator's chain", [&] {
        res = r.resync(req);
        if (res.found) {
            first = r.source();
            if (redo && first) second = r.source();
        }
    });
    double spent = thread_cpu_s() - start;
    lk.lock();
    pace_deep(d, r, spent);
    deep_done_.scanned = res.scanned;
    deep_done_.range = res.range;
    if (!failed.empty()) {
        res = {};
        res.tried = failed;
    }
    if (res.found && !first) { // cannot happen: the epoch was planned before
        res.found = false;
        res.tried = "could not plan epoch " + std::to_string(req.epoch) + " again";
    }
    if (!res.found && res.more) return;
    if (!res.found) return finish_deep(res);
    install_found(r, redo, std::move(first), std::move(second), res);
    ++resyncs_;
    draw_offset_ = res.words;
    Evidence held = std::move(d.held);
    uint32_t family = d.family;
    finish_deep(res);
    replay(held, family, Clock::now());
}

// Under mu_, after a slice that took `spent` seconds of CPU. Past the burst
// the slice is paid back at deep_share before the next. So it is once the
// family has opened as many files as the epoch holds and a tenth of the
// burst is spent (a resnet's offset, on any n): that epoch is over,
// unprefetched, and the rest of the burst would only take a core from the
// next (measured: 8.4 s against 4.0 s for a CPU-bound epoch on 2 cores).
void Tracker::pace_deep(DeepSearch& d, const Rank& r, double spent) {
    deep_done_.cpu_s += spent;
    bool epoch_over = r.current && d.held.opens.size() >= r.current->size() &&
                      deep_done_.cpu_s > opt_.deep_burst_s / 10;
    if ((deep_done_.cpu_s > opt_.deep_burst_s || epoch_over) && opt_.deep_share > 0 &&
        opt_.deep_share < 1)
        d.resume_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(
                                             spent * (1 / opt_.deep_share - 1)));
}

// Under mu_: the search is over, found or not.
void Tracker::finish_deep(const plan::ResyncResult& res) {
    size_t opens = deep_->held.opens.size();
    uint64_t epoch = deep_->req.epoch;
    deep_.reset();
    built_cv_.notify_all();
    set_thread_nice(0);
    if (res.found || mode_.load(std::memory_order_relaxed) != Mode::clairvoyant) return;
    fall_back("the first opens of epoch " + std::to_string(epoch) + " (" + std::to_string(opens) +
              " held) fit no seed clairfs searched (" + res.tried + ", pre_draws_max): " +
              opt_.keys_hint +
              ", or does the job draw more than that before its loader (a model initialised on "
              "the CPU draws one or two per parameter: raise pre_draws_max, or set pre_draws)?");
}

} // namespace clairfs::track
