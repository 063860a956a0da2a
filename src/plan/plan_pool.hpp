// SPDX-License-Identifier: MIT
// Spare EpochPlans for a planner to refill, so an epoch of a million samples
// does not allocate (and page-fault) tens of megabytes anew. A plan comes
// back when its last holder (tracker or scheduler, any thread) drops it.
#pragma once

#include "clairfs/plan/epoch_plan.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace clairfs::plan {

class PlanPool : public std::enable_shared_from_this<PlanPool> {
public:
    // A plan to fill: a spare one if there is one, else a new one. Its
    // deleter returns it here; the pool lives as long as any of its plans.
    std::shared_ptr<EpochPlan> take();
    // No more plans will be taken: free the spares, keep none from now on.
    void close();

private:
    void give_back(EpochPlan* plan);

    std::mutex mu_; // leaf lock, taken by whichever thread drops a plan
    std::vector<std::unique_ptr<EpochPlan>> spare_;
    bool closed_ = false;
};

} // namespace clairfs::plan
