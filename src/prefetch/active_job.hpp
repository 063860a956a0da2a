// SPDX-License-Identifier: MIT
// A registered job as the engine runs it: the job, one planner per local
// rank feeding the tracker, and the scheduler's scratch space.
#pragma once

#include "clairfs/plan/epoch_plan.hpp"
#include "clairfs/plan/job.hpp"
#include "clairfs/prefetch/engine.hpp"
#include "clairfs/track/tracker.hpp"

#include <memory>
#include <vector>

namespace clairfs::prefetch {

struct Engine::Active {
    Active(std::shared_ptr<const plan::Job> j, const index::Index& idx);

    std::shared_ptr<const plan::Job> job; // outlives the planners, which refer to its dataset
    std::vector<std::unique_ptr<plan::RankPlanner>> planners;
    std::unique_ptr<track::Tracker> tracker;

    // Scheduler thread only, per node: the round in which it last fell
    // inside the window of files worth holding, and in which the RAM tier
    // last held it.
    std::vector<uint32_t> in_window;
    std::vector<uint32_t> held;
    std::vector<uint32_t> window_index; // valid where in_window is this round
    uint32_t round = 0;
    bool fallback_logged = false;
};

} // namespace clairfs::prefetch
