// SPDX-License-Identifier: MIT
// Every rank's order, one epoch at a time, from the daemon's own order
// code: a DistributedSampler epoch is one permutation of the dataset that
// all ranks index into (rank r's p-th sample is entry p * world + r), so
// 4,096 ranks cost one array of 32-bit indices per epoch, not 4,096.
// Only the epochs some rank is in, and the one after (the daemon knows
// the current and the next), are held.
#pragma once

#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/job_spec.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace clairfs::sim {

inline constexpr uint32_t none = UINT32_MAX;

class SimOrders {
public:
    SimOrders(const order::JobSpec& spec, uint32_t n);

    // Positions each rank opens per epoch (the same for every rank).
    uint32_t positions() const { return positions_; }
    uint32_t epochs() const { return spec_.epochs; }

    // Builds epoch e (0 = the job's start_epoch) if not held; epochs are
    // built in order.
    void build(uint32_t e);
    // Drops the epochs before e.
    void release_before(uint32_t e);

    // The file rank r opens at position p of epoch e (built).
    uint32_t file(uint32_t e, uint32_t r, uint32_t p) const {
        const Epoch& x = *epochs_.at(e);
        return x.order[(uint64_t{p} * world_ + r) % x.order.size()];
    }
    // The first index k of epoch e's order (before the split into ranks)
    // at which some rank opens file f: rank k % world, position k / world;
    // none if no rank does (or e is not held).
    uint32_t first(uint32_t e, uint32_t f) const {
        auto it = epochs_.find(e);
        return it == epochs_.end() ? none : it->second->first[f];
    }
    uint32_t world() const { return world_; }

private:
    struct Epoch {
        std::vector<order::Sample> order;
        std::vector<uint32_t> first;
    };
    order::JobSpec spec_;
    uint32_t n_;
    uint32_t world_;
    uint32_t positions_ = 0;
    std::unique_ptr<order::EpochOrders> single_; // world 1, any sampler
    uint32_t built_ = 0;                          // epochs built so far
    std::map<uint32_t, std::unique_ptr<Epoch>> epochs_;
};

} // namespace clairfs::sim
