// SPDX-License-Identifier: MIT
#include "active_job.hpp"

#include <sys/stat.h>

namespace clairfs::prefetch {

Engine::Active::Active(std::shared_ptr<const plan::Job> j, const index::Index& idx,
                       const Engine& engine)
    : job(std::move(j)), in_window(idx.size(), 0), window_index(idx.size(), 0),
      tier_size(idx.size(), not_tiered) {
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (S_ISREG(n.mode) && engine.tiered(n) && n.size < not_tiered)
            tier_size[id] = static_cast<uint32_t>(n.size);
    }
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
    topt.sample_nodes.assign(idx.size(), 0);
    for (const layout::Sample& s : job->dataset.samples)
        if (index::NodeId n = layout::opened_node(idx, s); n != layout::no_node)
            topt.sample_nodes[n] = 1;
    tracker = std::make_unique<track::Tracker>(job->ranks, std::move(sources), std::move(topt));
}

} // namespace clairfs::prefetch
