// SPDX-License-Identifier: MIT
// One loader of a validated registration, ready to plan: the sampler settings, which of
// the job's ranks run on this node, and the dataset as the job numbers it.
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/job_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::plan {

// How far down the global generator's chain the deep search looks for a
// RandomSampler's seed (order/chain_scan.hpp): 2^30 words, a model of about
// a billion parameters initialised on the CPU between manual_seed and the
// loader. About 35 s of one core at its worst (bench/RESULTS.md).
inline constexpr uint64_t deep_chain_words = uint64_t{1} << 30;

struct Job {
    order::JobSpec spec;         // spec.rank is ignored: see ranks
    std::vector<uint32_t> ranks; // the job's ranks whose loaders run on this node, ascending
    std::string root;            // the dataset directory, relative to the mount root
    layout::Dataset dataset;     // built from the mount's index at registration
    // How far a search for the seed goes when an epoch's opens do not fit
    // (global-generator chain words, or seed + epoch values); 0: never.
    uint64_t resync_draws = 4096;
    // How far the deep chain search goes (control::Registration::pre_draws_max).
    uint64_t pre_draws_max = deep_chain_words;
};

} // namespace clairfs::plan
