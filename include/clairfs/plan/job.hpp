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

struct Job {
    order::JobSpec spec;         // spec.rank is ignored: see ranks
    std::vector<uint32_t> ranks; // the job's ranks whose loaders run on this node, ascending
    std::string root;            // the dataset directory, relative to the mount root
    layout::Dataset dataset;     // built from the mount's index at registration
    // How far a search for the seed goes when an epoch's opens do not fit
    // (global-generator chain words, or seed + epoch values); 0: never.
    uint64_t resync_draws = 4096;
};

} // namespace clairfs::plan
