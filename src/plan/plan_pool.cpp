// SPDX-License-Identifier: MIT
#include "plan_pool.hpp"

namespace clairfs::plan {
namespace {

// The tracker holds a rank's current and next epoch and drops the one
// before just as it asks for the one after: a single spare covers that.
constexpr size_t max_spare = 1;

} // namespace

std::shared_ptr<EpochPlan> PlanPool::take() {
    std::unique_ptr<EpochPlan> plan;
    {
        std::lock_guard lk(mu_);
        if (!spare_.empty()) {
            plan = std::move(spare_.back());
            spare_.pop_back();
        }
    }
    if (!plan) plan = std::make_unique<EpochPlan>();
    auto self = shared_from_this();
    return {plan.release(), [self](EpochPlan* p) { self->give_back(p); }};
}

void PlanPool::close() {
    std::vector<std::unique_ptr<EpochPlan>> freed;
    std::lock_guard lk(mu_);
    closed_ = true;
    freed.swap(spare_);
}

void PlanPool::give_back(EpochPlan* plan) {
    std::unique_ptr<EpochPlan> owned(plan);
    std::lock_guard lk(mu_);
    if (closed_ || spare_.size() >= max_spare) return; // freed on the way out
    spare_.push_back(std::move(owned));
}

} // namespace clairfs::plan
