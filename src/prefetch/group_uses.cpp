// SPDX-License-Identifier: MIT
#include "group_uses.hpp"

#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/samplers.hpp"

#include <algorithm>

namespace clairfs::prefetch {
namespace {

constexpr uint32_t none = UINT32_MAX;

} // namespace

std::vector<uint32_t> first_opened(const plan::Job& job, const index::Index& idx,
                                   uint64_t seed_epoch) {
    const order::JobSpec& spec = job.spec;
    const auto n = static_cast<uint32_t>(job.dataset.samples.size());
    const uint64_t world = std::max<uint32_t>(spec.world_size, 1);
    std::vector<order::Sample> perm, mine;
    order::distributed_sampler_epoch(n, spec, seed_epoch, perm, mine);
    // What a rank opens: its sampler's share, less the loader's short last
    // batch with drop_last. The padding (wrapped around without the
    // sampler's drop_last) repeats files opened earlier in the epoch.
    uint64_t per_rank = mine.size();
    if (spec.drop_last && spec.batch_size > 0) per_rank -= per_rank % spec.batch_size;
    const uint64_t used = std::min<uint64_t>(perm.size(), per_rank * world);
    std::vector<uint32_t> first(idx.size(), none);
    for (uint64_t k = 0; k < used; ++k) {
        index::NodeId id = layout::opened_node(idx, job.dataset.samples[perm[k]]);
        if (id == layout::no_node || id >= first.size() || first[id] != none) continue;
        first[id] = static_cast<uint32_t>(k);
    }
    return first;
}

std::shared_ptr<const GroupUses::Epoch>
GroupUses::epoch(const plan::Job& job, const index::Index& idx, uint64_t seed_epoch) const {
    for (const auto& e : {now_, next_})
        if (e && e->seed_epoch == seed_epoch) return e;
    const uint32_t world = std::max<uint32_t>(job.spec.world_size, 1);
    auto e = std::make_shared<Epoch>();
    e->seed_epoch = seed_epoch;
    e->position = first_opened(job, idx, seed_epoch);
    for (uint32_t& p : e->position)
        if (p != none) p /= world;
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
