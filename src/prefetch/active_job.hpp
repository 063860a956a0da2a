// SPDX-License-Identifier: MIT
// A registered job as the engine runs it: its loaders (a training loader, a
// validation loader...), each with one planner per local rank feeding its
// tracker, and the processes that have opened its files.
#pragma once

#include "clairfs/plan/epoch_plan.hpp"
#include "clairfs/plan/job.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/track/tracker.hpp"
#include "chunks/range_follow.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace clairfs::prefetch {

struct LoaderRun {
    std::shared_ptr<const plan::Job> job; // outlives the planners, which refer to its dataset
    std::vector<std::unique_ptr<plan::RankPlanner>> planners;
    std::unique_ptr<track::Tracker> tracker;
    std::vector<uint8_t> covers; // per node: a sample of this loader opens it
    // Samples as byte ranges (layout "ranges"): followed by READs; null otherwise.
    std::unique_ptr<RangeFollow> ranges;
    std::unique_ptr<std::atomic<bool>> fallback_logged = std::make_unique<std::atomic<bool>>(false);
    // The same for the deep chain search's start (it stops the loader's prefetches).
    std::unique_ptr<std::atomic<bool>> deep_logged = std::make_unique<std::atomic<bool>>(false);

    bool covering(index::NodeId id) const { return id < covers.size() && covers[id]; }
};

// Whether two loaders read one order: equal specs, local ranks, roots and
// (over byte ranges) manifests. Two jobs of one seed's sweep do; an open or
// READ that fits both is then either's (JobTable::route_open, follow_read).
bool same_order(const LoaderRun& a, const LoaderRun& b);

struct ActiveJob {
    ActiveJob(std::string id, const std::vector<std::shared_ptr<const plan::Job>>& loaders,
           const index::Index& idx);

    const std::string id;
    std::vector<LoaderRun> loaders; // in registration order: the order they run in an epoch

    // Whether any loader's samples open `id`.
    bool covering(index::NodeId id) const;
    // Whether some loader would match this open now, in its current epoch.
    bool fits_this_epoch(index::NodeId id, uint32_t pid, uint32_t ppid) const;
    // Whether every loader reads as `other`'s does (same_order).
    bool reads_as(const ActiveJob& other) const;
    // Records a process whose opens matched this job; false if known.
    bool bind(uint32_t pid);
    // The processes bound so far (for status, and to retire the job).
    std::vector<uint32_t> pids() const;
    // Whether every process bound has exited (false if none was bound).
    bool exited() const;
    // The processes bound that have not exited.
    std::vector<uint32_t> live_pids() const;

    std::atomic<bool> retired{false};
    // Its registration named its loader process (Engine::bind_loader): its
    // reads are told apart from another job's of one order by process.
    std::atomic<bool> loader_named{false};

private:
    mutable std::mutex pids_mu_; // leaf lock
    std::vector<uint32_t> pids_;
};

} // namespace clairfs::prefetch
