// SPDX-License-Identifier: MIT
// With peers, when the group's RAM budgets together cannot hold the
// dataset: when some rank of the whole group, on any node, next opens each
// file of a DistributedSampler job. A home that evicts by this instead of
// by its own ranks' next use keeps the files the other nodes are about to
// ask for (Belady's rule over the group's future, not one node's), so the
// shared file system is read fewer times.
//
// The ranks of a data-parallel job move in step (every step ends in an
// all-reduce), so position p of this node's slowest rank is position p of
// every rank: rank r's p-th sample is the sampler's index p * world + r.
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/plan/job.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace clairfs::prefetch {

// For each node of the index: the first index k of the DistributedSampler
// order of epoch `seed_epoch` (the value the sampler adds to its seed),
// before its split into ranks, whose sample some rank opens: rank
// k % world_size opens it at its position k / world_size. UINT32_MAX for a
// node no rank opens that epoch (the sampler's or the loader's drop_last
// may leave a tail unread).
std::vector<uint32_t> first_opened(const plan::Job& job, const index::Index& idx,
                                   uint64_t seed_epoch);

class GroupUses {
public:
    // Where the group is: the slowest local rank's epoch (the value
    // DistributedSampler adds to its seed, its EpochPlan::seed_epoch), its
    // length in positions and its frontier; and the next epoch's, if known.
    // An epoch's order is drawn once and kept while it is one of the two.
    void set(const plan::Job& job, const index::Index& idx, uint64_t seed_epoch,
             uint64_t epoch_size, uint64_t position, std::optional<uint64_t> next_seed_epoch);
    // Positions from the frontier until some rank opens `id`; UINT64_MAX if
    // no rank does in either epoch (or before set()).
    uint64_t next_use(index::NodeId id) const;

private:
    struct Epoch {
        uint64_t seed_epoch = 0;
        std::vector<uint32_t> position; // per node: first position any rank opens it
    };
    std::shared_ptr<const Epoch> epoch(const plan::Job& job, const index::Index& idx,
                                       uint64_t seed_epoch) const;

    std::shared_ptr<const Epoch> now_, next_;
    uint64_t size_ = 0, at_ = 0;
};

} // namespace clairfs::prefetch
