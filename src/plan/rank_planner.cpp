// SPDX-License-Identifier: MIT
#include "clairfs/plan/epoch_plan.hpp"
#include "plan_pool.hpp"

#include <algorithm>

namespace clairfs::plan {

RankPlanner::RankPlanner(const order::JobSpec& spec, const layout::Dataset& dataset,
                         const index::Index& idx)
    : orders_(spec, static_cast<uint32_t>(dataset.samples.size())), left_(spec.epochs),
      index_size_(dataset.ranges.empty() ? idx.size() : dataset.samples.size()),
      pool_(std::make_shared<PlanPool>()), spec_(spec),
      n_(static_cast<uint32_t>(dataset.samples.size())),
      keys_are_samples_(!dataset.ranges.empty()) {
    // Samples as byte ranges share their files: a position's key is its
    // sample number, which the READ path finds from the read's offset. No
    // map for that: four bytes a sample, 57 MB for ImageNet-22k's.
    if (keys_are_samples_) return;
    // Symlinks are resolved once here, not per epoch: an epoch then maps
    // sample to node with one load per position.
    sample_node_.reserve(dataset.samples.size());
    for (const layout::Sample& s : dataset.samples)
        sample_node_.push_back(layout::opened_node(idx, s));
}

std::shared_ptr<const EpochPlan> RankPlanner::next() {
    if (left_ == 0) return nullptr;
    --left_;
    rewound_.reset();
    deep_.reset();
    std::shared_ptr<EpochPlan> plan = pool_->take();
    plan->next_same.clear();
    plan->epoch = orders_.epoch();
    if (spec_.sampler == order::SamplerKind::distributed && spec_.shuffle)
        plan->seed_epoch = orders_.seed_epoch();
    else
        plan->seed_epoch.reset();
    // Only where the iterator shapes the order (not a subset="both"
    // validation dataset, nor an older Keras's numpy order).
    if (orders_.tf() && orders_.tf()->by_iterator())
        plan->tf_iterator = orders_.tf_iterator();
    else
        plan->tf_iterator.reset();
    orders_.next(scratch_);
    plan->skipped_words = orders_.last_skipped_words();

    plan->nodes.resize(scratch_.size());
    if (keys_are_samples_)
        std::copy(scratch_.begin(), scratch_.end(), plan->nodes.begin());
    else
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
    if (left_ == 0) pool_->close(); // no epoch left to refill a plan for
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
