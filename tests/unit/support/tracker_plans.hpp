// SPDX-License-Identifier: MIT
// Tracker tests' material: the time of their opens, a tracker's options,
// epoch plans built by hand (sample s is node s + 1, so node 0 and the
// nodes past the dataset are other files), epoch sources over them, and
// the opens a loader's workers make.
#pragma once

#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/track/tracker.hpp"

#include <algorithm>
#include <chrono>
#include <doctest/doctest.h>
#include <random>
#include <vector>

namespace clairfs::test {

using PlanPtr = std::shared_ptr<const plan::EpochPlan>;

inline constexpr uint32_t extra_nodes = 10; // non-dataset nodes after the samples

// A fixed time the tests give their opens, so that what a tracker reckons
// from the times it is told is the same on every run.
inline const track::Clock::time_point t0 = track::Clock::time_point{} + std::chrono::seconds(1000);

// A tracker over a loader of `batch` and `workers` (0: the main process
// reads), every other option its default.
inline track::TrackerOptions tracker_options(uint32_t batch, uint32_t workers) {
    track::TrackerOptions o;
    o.layout = {batch, workers};
    return o;
}

// The straightforward construction, independent of RankPlanner's.
// A job of JobSpec's defaults with `seed`, for `epochs` epochs.
inline order::JobSpec random_spec(uint64_t seed, uint32_t epochs) {
    order::JobSpec s;
    s.seed = seed;
    s.epochs = epochs;
    return s;
}

inline PlanPtr make_plan(uint64_t epoch, std::vector<index::NodeId> nodes, size_t index_size) {
    auto e = std::make_shared<plan::EpochPlan>();
    e->epoch = epoch;
    e->nodes = std::move(nodes);
    e->first_position.assign(index_size, plan::no_position);
    std::vector<uint32_t> last(index_size, plan::no_position);
    for (uint32_t p = 0; p < e->nodes.size(); ++p) {
        index::NodeId n = e->nodes[p];
        if (n == layout::no_node) continue;
        if (e->first_position[n] == plan::no_position) {
            e->first_position[n] = p;
        } else {
            if (e->next_same.empty()) e->next_same.assign(e->nodes.size(), plan::no_position);
            e->next_same[last[n]] = p;
        }
        last[n] = p;
    }
    return e;
}

// Every epoch of `spec` (spec.rank's) over n samples.
inline std::vector<PlanPtr> plans_of(const order::JobSpec& spec, uint32_t n) {
    REQUIRE(order::validate(spec, n) == "");
    order::EpochOrders orders(spec, n);
    std::vector<PlanPtr> out;
    std::vector<order::Sample> samples;
    for (uint32_t e = 0; e < spec.epochs; ++e) {
        uint64_t epoch = orders.epoch();
        orders.next(samples);
        std::vector<index::NodeId> nodes(samples.begin(), samples.end());
        for (auto& x : nodes) ++x;
        out.push_back(make_plan(epoch, std::move(nodes), n + 1 + extra_nodes));
    }
    return out;
}

// Gives the plans in order, then nullptr; counts how often it was asked.
inline track::EpochSource source_of(std::vector<PlanPtr> plans, int* calls = nullptr) {
    auto at = std::make_shared<size_t>(0);
    return [plans = std::move(plans), at, calls]() -> PlanPtr {
        if (calls) ++*calls;
        return *at < plans.size() ? plans[(*at)++] : nullptr;
    };
}

// The positions of an epoch of `size` in the order a loader with `l`'s
// workers might open them: each worker's stream in order, the workers
// interleaved at random.
inline std::vector<uint64_t> worker_opens(const plan::WorkerLayout& l, uint64_t size,
                                          std::mt19937& rng) {
    std::vector<uint64_t> next(l.streams(), 0), out;
    std::vector<uint32_t> live;
    while (true) {
        live.clear();
        for (uint32_t w = 0; w < l.streams(); ++w)
            if (l.position(w, next[w]) < size) live.push_back(w);
        if (live.empty()) return out;
        // Bursts let one worker run ahead of the others for a while.
        uint32_t w = live[std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng)];
        for (int burst = std::uniform_int_distribution<int>(1, 8)(rng);
             burst > 0 && l.position(w, next[w]) < size; --burst)
            out.push_back(l.position(w, next[w]++));
    }
}

// The tracker's view once its planner thread has built every epoch asked
// for: a rank's `next` (and whether it is finished) is otherwise only
// settled a moment after the open that began the epoch before.
inline track::Snapshot settled(const track::Tracker& t, track::Clock::time_point now) {
    t.wait_for_plans();
    return t.snapshot(now);
}

// The smallest position not in `opened`.
inline uint64_t first_unopened(const std::vector<bool>& opened) {
    return static_cast<uint64_t>(std::find(opened.begin(), opened.end(), false) - opened.begin());
}

} // namespace clairfs::test
