// SPDX-License-Identifier: MIT
// The scheduler's thread and its wake-ups (scheduler.hpp); the round
// itself is in schedule_round.cpp.
#include "scheduler.hpp"
#include "active_job.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/join_within.hpp"
#include "clairfs/sys/normal_thread.hpp"
#include "job_table.hpp"
#include "page_cache.hpp"
#include "peer_homes.hpp"

#include <nlohmann/json.hpp>

#include <pthread.h>
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

Scheduler::Scheduler(size_t nodes, Parts parts, Calls calls)
    : parts_(parts), calls_(std::move(calls)), in_window_(nodes, 0), window_index_(nodes, 0) {}

Scheduler::~Scheduler() {
    stop_within({});
}

void Scheduler::start(FetchPool& pool) {
    pool_ = &pool;
    thread_ = sys::normal_thread([this] {
        loop();
        done_.store(true, std::memory_order_release);
    });
}

bool Scheduler::stop_within(std::chrono::milliseconds bound) {
    {
        std::lock_guard lk(wake_mu_);
        stopping_ = true;
    }
    wake_cv_.notify_all();
    return sys::join_within(thread_, done_, bound);
}

void Scheduler::wake() {
    {
        std::lock_guard lk(wake_mu_);
        wake_ = true;
    }
    wake_cv_.notify_one();
}

void Scheduler::matched_open(bool new_epoch) {
    uint64_t n = matched_opens_.fetch_add(1, std::memory_order_relaxed) + 1;
    // Only when a round is due (round_due): woken by every open, the
    // scheduler cost the daemon a context switch per file for rounds it
    // then skipped.
    if (new_epoch || n >= round_at_.load(std::memory_order_relaxed)) wake();
}

void Scheduler::matched_range_read() {
    matched_opens_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lk(wake_mu_);
        wake_ = true;
        ranges_waiting_ = true;
    }
    wake_cv_.notify_one();
}

void Scheduler::landed(bool for_push) {
    if (for_push) {
        {
            std::lock_guard lk(wake_mu_);
            wake_ = true;
            push_waiting_ = true;
        }
        wake_cv_.notify_one();
    }
    landed_.fetch_add(1, std::memory_order_release);
    // The last round found the prefetch queue full: room now.
    if (refill_wanted_.exchange(false, std::memory_order_relaxed)) wake();
}

void Scheduler::force_round() {
    {
        std::lock_guard lk(wake_mu_);
        force_round_ = true;
        wake_ = true;
    }
    wake_cv_.notify_one();
}

void Scheduler::status(nlohmann::json& prefetch) const {
    prefetch["lead"] = lead_.load(std::memory_order_relaxed);
    prefetch["scheduler_wakeups"] = wakeups_.load(std::memory_order_relaxed);
}

// A round can change what is held only when the ranks have moved on (files
// fall out of the window behind them, new ones enter ahead) or, if the last
// round filled the prefetch queue before the window, when a fetch landed.
// Skipping the rest keeps the scheduler's CPU in proportion to the opens,
// not to the size of the window times the wake-ups.
bool Scheduler::round_due(const Jobs& jobs) {
    if (&jobs != jobs_seen_) { // jobs came or went
        jobs_seen_ = &jobs;
        ran_ = false;
    }
    if (!ran_) return true;
    if (wanted_more_ && landed_.load(std::memory_order_acquire) != last_landed_) return true;
    return matched_opens_.load(std::memory_order_relaxed) - last_opens_ >= round_step();
}

// Opens between rounds: a sixteenth of the lead the window aims at.
uint64_t Scheduler::round_step() const {
    return std::max<uint64_t>(1, lead_target_ / 16);
}

void Scheduler::loop() {
    pthread_setname_np(pthread_self(), "clairfs-sched");
    std::unique_lock lk(wake_mu_);
    while (!stopping_) {
        wake_cv_.wait_for(lk, idle_round, [this] { return wake_ || stopping_; });
        if (stopping_) break;
        if (wake_) wakeups_.fetch_add(1, std::memory_order_relaxed); // else the idle tick
        wake_ = false;
        if (std::exchange(force_round_, false)) ran_ = false;
        lk.unlock();
        auto jobs = parts_.table.jobs();
        // A round that fails ends the predictions (the mount serves on as
        // if unregistered); retrying it every few milliseconds would only
        // flood the log with the same failure.
        auto why = sys::contained("a prefetch round", [&] { wake_up(*jobs); });
        if (!why.empty())
            for (const auto& j : *jobs)
                for (auto& l : j->loaders)
                    l.tracker->abandon("prefetching failed inside clairfs (" + why + ")");
        lk.lock();
        rest(lk);
    }
}

void Scheduler::wake_up(const Jobs& jobs) {
    PageCache& page = parts_.page;
    PeerHomes& group = parts_.group;
    parts_.table.retire_exited();
    page.push_landed();
    if (jobs.empty()) page.jobs_gone(); // a job registered later drops anew
    // holding() before the placements: check_agreement() queues them
    // before it lifts the hold.
    const bool hold = group.holding();
    if (group.on() && !hold) group.place_due_homes();
    // Samples as byte ranges: every wake-up, since a READ told is rare once
    // the samples due are pushed, and each one matters.
    if (parts_.table.range_loaders() != 0 && !hold) calls_.ranges_round(jobs);
    if (!jobs.empty() && !hold && round_due(jobs)) {
        round(jobs);
        // The open that makes the next round due wakes it.
        round_at_.store(last_opens_ + round_step(), std::memory_order_relaxed);
    }
    if (page.drops_reads())
        page.drop_reads(!jobs.empty() && parts_.table.mode() == track::Mode::clairvoyant);
    page.weigh_room();
}

// The rest between rounds, cut short only to push files that landed for a
// push (--opens fanotify): a file due within reach that lands now would
// otherwise wait out the rest, and its open, with no OPEN to push at, may
// come first (a READ then). Likewise a ranges job's reader at the edge of
// what was pushed: it reads pushed samples faster than a rest lasts.
void Scheduler::rest(std::unique_lock<std::mutex>& lk) {
    const auto rest_until = std::chrono::steady_clock::now() + min_round_gap;
    while (wake_cv_.wait_until(lk, rest_until,
                               [this] { return push_waiting_ || ranges_waiting_ || stopping_; })) {
        if (stopping_) break;
        bool files = std::exchange(push_waiting_, false);
        bool ranges = std::exchange(ranges_waiting_, false);
        lk.unlock();
        if (files)
            if (auto failed = sys::contained("a push of landed files",
                                             [&] { parts_.page.push_landed(); });
                !failed.empty())
                LOG_WARN("pushing landed files failed: %s", failed.c_str());
        if (ranges && !parts_.group.holding()) {
            auto current = parts_.table.jobs();
            if (auto failed =
                    sys::contained("a ranges round", [&] { calls_.ranges_round(*current); });
                !failed.empty())
                LOG_WARN("prefetching samples failed: %s", failed.c_str());
        }
        lk.lock();
    }
}

} // namespace clairfs::prefetch
