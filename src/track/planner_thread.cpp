// SPDX-License-Identifier: MIT
// The tracker's planner thread: builds a rank's next epoch once the rank
// began the one before it, so no open (a FUSE thread, holding the
// tracker's lock) ever builds one.
#include "clairfs/sys/contained.hpp"
#include "clairfs/track/tracker.hpp"

#include <pthread.h>

namespace clairfs::track {

void Tracker::plan_loop() {
    pthread_setname_np(pthread_self(), "clairfs-plan");
    std::unique_lock lk(mu_);
    while (true) {
        Rank* wanted = nullptr;
        auto ready = [&] {
            for (Rank& r : ranks_)
                if (r.next_wanted) wanted = &r;
            return stopping_ || wanted || !resync_queue_.empty() ||
                   (deep_ && Clock::now() >= deep_->resume_at);
        };
        // A deep search paced past its burst waits its turn, woken early
        // by an epoch to build.
        if (deep_)
            plan_cv_.wait_until(lk, deep_->resume_at, ready);
        else
            plan_cv_.wait(lk, ready);
        if (!ready()) continue;
        if (stopping_) return;
        // Epochs asked for first: a search corrects the first epoch a rank
        // has not begun, which must exist by then. A deep search's slices
        // last: each is a fraction of a second, so neither waits long.
        if (!wanted && resync_queue_.empty())
            deep_slice(lk);
        else if (!wanted)
            resync_next(lk);
        else
            build_next(lk, *wanted);
    }
}

// The planner thread's steps: `lk` is held on entry and on exit.
void Tracker::deep_slice(std::unique_lock<std::mutex>& lk) {
    std::string failed = sys::contained("searching the global generator's chain",
                                        [&] { run_deep_slice(lk); });
    if (failed.empty()) return;
    fall_back("could not search for the job's seed: " + failed);
    if (deep_) finish_deep({});
}

void Tracker::resync_next(std::unique_lock<std::mutex>& lk) {
    uint32_t family = resync_queue_.front();
    resync_queue_.pop_front();
    std::string failed =
        sys::contained("searching for the job's seed", [&] { run_resync(lk, family); });
    if (!failed.empty()) fall_back("could not search for the job's seed: " + failed);
}

void Tracker::build_next(std::unique_lock<std::mutex>& lk, Rank& wanted) {
    wanted.next_wanted = false;
    std::shared_ptr<const plan::EpochPlan> plan;
    lk.unlock();
    // Only this thread calls the source now, so it needs no lock. A
    // thread entry lets no exception out (an allocation failing for a
    // huge epoch): the rank then has no next epoch, and the prediction
    // is given up below rather than followed with a hole in it.
    std::string failed =
        sys::contained("building the next epoch's plan", [&] { plan = wanted.source(); });
    lk.lock();
    if (!failed.empty()) fall_back("could not build the next epoch's plan: " + failed);
    install_next(wanted, std::move(plan));
}

// Under mu_. A rank whose source ended may have become finished now, which
// moves the slowest epoch as its last open would have.
void Tracker::install_next(Rank& r, std::shared_ptr<const plan::EpochPlan> plan) {
    r.next = std::move(plan);
    if (r.next)
        ++r.produced;
    else
        r.source_ended = true;
    r.next_pending = false;
    --pending_;
    recount_if_slowest_moved();
    built_cv_.notify_all();
}

void Tracker::wait_for_plans() const {
    std::unique_lock lk(mu_);
    built_cv_.wait(lk, [this] { return pending_ == 0 && !deep_; });
}

} // namespace clairfs::track
