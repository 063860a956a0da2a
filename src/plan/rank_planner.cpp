// SPDX-License-Identifier: MIT
#include "clairfs/plan/epoch_plan.hpp"

#include <atomic>

namespace clairfs::plan {

RankPlanner::RankPlanner(const order::JobSpec& spec, const layout::Dataset& dataset,
                         const index::Index& idx)
    : orders_(spec, static_cast<uint32_t>(dataset.samples.size())), left_(spec.epochs),
      index_size_(idx.size()) {
    // Symlinks are resolved once here, not per epoch: an epoch then maps
    // sample to node with one load per position.
    sample_node_.reserve(dataset.samples.size());
    for (const layout::Sample& s : dataset.samples)
        sample_node_.push_back(layout::opened_node(idx, s));
}

std::shared_ptr<const EpochPlan> RankPlanner::next() {
    if (left_ == 0) return nullptr;
    --left_;
    std::shared_ptr<EpochPlan> plan = fresh_plan();
    plan->epoch = orders_.epoch();
    orders_.next(scratch_);

    plan->nodes.resize(scratch_.size());
    for (size_t p = 0; p < scratch_.size(); ++p) plan->nodes[p] = sample_node_[scratch_[p]];

    plan->first_position.assign(index_size_, no_position);
    bool repeats = false;
    const auto size = static_cast<uint32_t>(plan->nodes.size());
    for (uint32_t p = 0; p < size; ++p) {
        index::NodeId n = plan->nodes[p];
        if (n == layout::no_node) continue;
        uint32_t& first = plan->first_position[n];
        if (first == no_position)
            first = p;
        else
            repeats = true;
    }
    if (repeats) link_repeats(*plan);
    if (left_ == 0) made_.clear(); // no epoch left to refill a plan for
    return plan;
}

// The tracker holds a rank's current and next epoch; the one before is
// usually released by the time the one after is planned.
std::shared_ptr<EpochPlan> RankPlanner::fresh_plan() {
    constexpr size_t kept = 3;
    for (auto it = made_.begin(); it != made_.end(); ++it) {
        if (it->use_count() != 1) continue;
        // use_count() is a relaxed load: the fence orders the last owner's
        // reads of the plan (before its release decrement) before our writes.
        std::atomic_thread_fence(std::memory_order_acquire);
        std::shared_ptr<EpochPlan> plan = std::move(*it);
        made_.erase(it);
        plan->next_same.clear();
        made_.push_back(plan);
        return plan;
    }
    auto plan = std::make_shared<EpochPlan>();
    if (made_.size() == kept) made_.erase(made_.begin());
    made_.push_back(plan);
    return plan;
}

// Walking backwards, each position's successor is the last one seen of its
// node. Only epochs where some node repeats get here.
void RankPlanner::link_repeats(EpochPlan& plan) {
    if (later_.empty()) later_.assign(index_size_, no_position);
    plan.next_same.assign(plan.nodes.size(), no_position);
    for (size_t p = plan.nodes.size(); p-- > 0;) {
        index::NodeId n = plan.nodes[p];
        if (n == layout::no_node) continue;
        plan.next_same[p] = later_[n];
        later_[n] = static_cast<uint32_t>(p);
    }
    for (index::NodeId n : plan.nodes)
        if (n != layout::no_node) later_[n] = no_position;
}

} // namespace clairfs::plan
