// SPDX-License-Identifier: MIT
#include "group_uses.hpp"

#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/samplers.hpp"

#include <algorithm>

namespace clairfs::prefetch {
namespace {

constexpr uint32_t none = UINT32_MAX;

} // namespace

std::shared_ptr<const GroupUses::Epoch>
GroupUses::epoch(const plan::Job& job, const index::Index& idx, uint64_t seed_epoch) const {
    for (const auto& e : {now_, next_})
        if (e && e->seed_epoch == seed_epoch) return e;
    const order::JobSpec& spec = job.spec;
    const auto n = static_cast<uint32_t>(job.dataset.samples.size());
    std::vector<order::Sample> perm, mine;
    order::distributed_sampler_epoch(n, spec, seed_epoch, perm, mine);
    auto e = std::make_shared<Epoch>();
    e->seed_epoch = seed_epoch;
    e->position.assign(idx.size(), none);
    // The padding (wrapped around without drop_last) repeats files some
    // rank opened earlier in the epoch: their first position stands.
    const uint64_t world = std::max<uint32_t>(spec.world_size, 1);
    for (uint64_t k = 0; k < perm.size(); ++k) {
        index::NodeId id = layout::opened_node(idx, job.dataset.samples[perm[k]]);
        if (id == layout::no_node || id >= e->position.size() || e->position[id] != none)
            continue;
        e->position[id] = static_cast<uint32_t>(k / world);
    }
    return e;
}

void GroupUses::set(const plan::Job& job, const index::Index& idx, uint64_t seed_epoch,
                    uint64_t epoch_size, uint64_t position,
                    std::optional<uint64_t> next_seed_epoch) {
    auto now = epoch(job, idx, seed_epoch);
    auto next = next_seed_epoch ? epoch(job, idx, *next_seed_epoch) : nullptr;
    now_ = std::move(now);
    next_ = std::move(next);
    size_ = epoch_size;
    at_ = std::min(position, epoch_size);
}

uint64_t GroupUses::next_use(index::NodeId id) const {
    if (now_ && id < now_->position.size()) {
        uint32_t p = now_->position[id];
        if (p != none && p >= at_) return p - at_;
    }
    if (next_ && id < next_->position.size()) {
        uint32_t p = next_->position[id];
        if (p != none) return size_ - at_ + p;
    }
    return UINT64_MAX;
}

} // namespace clairfs::prefetch
