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
    std::vector<order::Sample> perm;
    const std::vector<uint32_t> by_sample =
        order::distributed_first_opened(n, spec, seed_epoch, order::ranks_open(spec, n), perm);
    std::vector<uint32_t> first(idx.size(), none);
    for (uint32_t x = 0; x < n; ++x) {
        if (by_sample[x] == none) continue;
        index::NodeId id = layout::opened_node(idx, job.dataset.samples[x]);
        if (id == layout::no_node || id >= first.size()) continue;
        first[id] = std::min(first[id], by_sample[x]); // two samples may open one file
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
