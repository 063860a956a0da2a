// SPDX-License-Identifier: MIT
// `clairfs simulate`: the job's every open on every node, in the order the
// framework makes them, and what clairfs does about each, timed by a model
// of queues with the configured bandwidths. Orders, home placement, the
// prefetch window, eviction and source choice are the daemon's own
// functions (order/, cache_rules.hpp, peer/source_model.hpp); only time is
// modelled (see clairfs(1), SIMULATION).
#pragma once

#include "clairfs/sim/sim_config.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace clairfs::sim {

struct EpochResult {
    // From the moment every rank finished the epoch before (or the start)
    // until every rank has finished this one, as bench/cluster.py times it.
    double seconds = 0;
    double stall_s = 0;    // the longest any rank's training loop waited for data
    uint64_t fs_bytes = 0; // read from the shared file system, all nodes
    double fs_requests = 0; // fractional: a job's mean requests per file
    uint64_t fs_files = 0;
    uint64_t peer_bytes = 0; // moved between nodes
    uint64_t peer_files = 0;
    // Every open of the job, by where its bytes were when it came.
    uint64_t opens = 0;
    uint64_t ram_hits = 0;   // in clairfs's RAM tier (or the page cache, local-warm)
    uint64_t page_cache_hits = 0; // direct: in the node's page cache
    uint64_t waited = 0;     // on its way in (a prefetch not landed yet)
    uint64_t from_ssd = 0;   // missed RAM, read from the SSD tier
    uint64_t from_peer = 0;  // missed, fetched from its home on another node
    uint64_t from_fs = 0;    // missed, read from the shared file system
    uint64_t evictions = 0;        // files clairfs's RAM tiers gave up, all nodes
    uint64_t evicted_unopened = 0; // of them, fetched and given up before any open
};

struct ScenarioResult {
    Scenario scenario = Scenario::direct;
    std::vector<EpochResult> epochs;
    double wall_s = 0;   // how long the simulation itself took
    uint64_t events = 0; // events processed
    uint64_t pinned_nodes = 0; // clairfs-peers: nodes whose homes keep their files for good
    // clairfs-peers: the most bytes homed on one node. With --mem at least
    // this and the group's RAM at least the dataset, every home pins its
    // files (homes_pinned) and the shared file system is read once.
    uint64_t max_here_bytes = 0;
};

// Progress for a long run: scenario, epoch (of the slowest rank), the
// share of the scenario's opens done.
using Progress = std::function<void(Scenario, uint32_t epoch, double done)>;

// "" or why the job cannot be simulated on `files` samples (each rank
// would open nothing in an epoch). Call after order::validate.
std::string check_job(const SimConfig& cfg, uint64_t files);

// Runs one scenario. `sizes` from dataset_sizes(); cfg.job must have
// passed order::validate for sizes.size() samples.
ScenarioResult simulate(const SimConfig& cfg, const std::vector<uint32_t>& sizes, Scenario s,
                        const Progress& progress = {});

} // namespace clairfs::sim
