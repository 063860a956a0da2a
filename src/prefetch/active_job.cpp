// SPDX-License-Identifier: MIT
#include "active_job.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace clairfs::prefetch {
namespace {

LoaderRun make_loader(std::shared_ptr<const plan::Job> job, const index::Index& idx) {
    LoaderRun l;
    l.job = std::move(job);
    const order::JobSpec& spec = l.job->spec;
    auto n = static_cast<uint32_t>(l.job->dataset.samples.size());
    bool searchable = plan::resyncable(spec, n);
    std::vector<track::EpochSource> sources;
    std::vector<track::ResyncFn> resyncs;
    uint64_t max_offset = l.job->resync_draws;
    // A tf.data search tries iterators, not draws: at most this many.
    if (spec.framework == order::Framework::tensorflow)
        max_offset = std::min(max_offset, plan::tf_max_iterator_offset);
    for (uint32_t rank : l.job->ranks) {
        order::JobSpec s = spec;
        s.rank = rank;
        l.planners.push_back(std::make_unique<plan::RankPlanner>(s, l.job->dataset, idx));
        plan::RankPlanner* p = l.planners.back().get();
        sources.emplace_back([p] { return p->next(); });
        if (searchable)
            resyncs.emplace_back(
                [p, max_offset](const plan::ResyncRequest& r) { return p->resync(r, max_offset); });
        else
            resyncs.emplace_back();
    }
    track::TrackerOptions topt;
    topt.layout = {spec.batch_size, spec.num_workers};
    topt.prefetch_factor = spec.prefetch_factor;
    topt.resync_max = max_offset;
    l.covers.assign(idx.size(), 0);
    for (const layout::Sample& s : l.job->dataset.samples)
        if (index::NodeId id = layout::opened_node(idx, s); id != layout::no_node) l.covers[id] = 1;
    topt.sample_nodes = l.covers;
    l.tracker = std::make_unique<track::Tracker>(l.job->ranks, std::move(sources),
                                                 std::move(resyncs), std::move(topt));
    return l;
}

} // namespace

Engine::Active::Active(std::string job_id,
                       const std::vector<std::shared_ptr<const plan::Job>>& loader_jobs,
                       const index::Index& idx)
    : id(std::move(job_id)) {
    for (const auto& j : loader_jobs) loaders.push_back(make_loader(j, idx));
}

bool Engine::Active::covering(index::NodeId node) const {
    return std::ranges::any_of(loaders, [node](const LoaderRun& l) { return l.covering(node); });
}

bool Engine::Active::would_match(index::NodeId node, uint32_t pid, uint32_t ppid) const {
    return std::ranges::any_of(loaders, [&](const LoaderRun& l) {
        return l.covering(node) && l.tracker->would_match(node, pid, ppid);
    });
}

bool Engine::Active::bind(uint32_t pid) {
    std::lock_guard lk(pids_mu_);
    if (std::ranges::find(pids_, pid) != pids_.end()) return false;
    // Workers respawned every epoch pile up: keep the list to live ones.
    if (pids_.size() >= 256)
        std::erase_if(pids_, [](uint32_t p) { return kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH; });
    pids_.push_back(pid);
    return true;
}

std::vector<uint32_t> Engine::Active::pids() const {
    std::lock_guard lk(pids_mu_);
    return pids_;
}

bool Engine::Active::exited() const {
    std::vector<uint32_t> p = pids();
    if (p.empty()) return false;
    return std::ranges::all_of(
        p, [](uint32_t pid) { return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; });
}

} // namespace clairfs::prefetch
