// SPDX-License-Identifier: MIT
#include "active_job.hpp"

namespace clairfs::prefetch {

Engine::Active::Active(std::shared_ptr<const plan::Job> j, const index::Index& idx)
    : job(std::move(j)), in_window(idx.size(), 0), held(idx.size(), 0),
      window_index(idx.size(), 0) {
    std::vector<track::EpochSource> sources;
    for (uint32_t rank : job->ranks) {
        order::JobSpec spec = job->spec;
        spec.rank = rank;
        planners.push_back(std::make_unique<plan::RankPlanner>(spec, job->dataset, idx));
        plan::RankPlanner* p = planners.back().get();
        sources.emplace_back([p] { return p->next(); });
    }
    track::TrackerOptions topt;
    topt.layout = {job->spec.batch_size, job->spec.num_workers};
    topt.prefetch_factor = job->spec.prefetch_factor;
    tracker = std::make_unique<track::Tracker>(job->ranks, std::move(sources), topt);
}

} // namespace clairfs::prefetch
