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
    Active(std::shared_ptr<const plan::Job> j, const index::Index& idx, const Engine& engine);

    std::shared_ptr<const plan::Job> job; // outlives the planners, which refer to its dataset
    std::vector<std::unique_ptr<plan::RankPlanner>> planners;
    std::unique_ptr<track::Tracker> tracker;

    // Scheduler thread only, per node: the round in which it last fell
    // inside the window of files worth holding.
    std::vector<uint32_t> in_window;
    std::vector<uint32_t> window_index; // valid where in_window is this round
    // Per node: its size if the tiers take it, else not_tiered. One dense
    // load per window position instead of a walk into the index's nodes.
    static constexpr uint32_t not_tiered = UINT32_MAX;
    std::vector<uint32_t> tier_size;
    uint32_t round = 0;
    bool fallback_logged = false;
    bool pages_dropped = false; // Engine::drop_pages has dropped what was read before
    // What the last round saw, to tell whether the next one can change
    // anything (Engine::round_due).
    bool ran = false;
    bool wanted_more = false; // the prefetch queue filled before the window did
    uint64_t last_opens = 0;
    uint64_t last_landed = 0;
    uint64_t lead_target = 0; // lead_items() of the last round
};

} // namespace clairfs::prefetch
