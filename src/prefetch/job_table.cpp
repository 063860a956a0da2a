// SPDX-License-Identifier: MIT
#include "job_table.hpp"

#include <algorithm>

namespace clairfs::prefetch {

std::shared_ptr<const JobTable::Jobs> JobTable::jobs() const {
    std::lock_guard lk(job_mu_);
    return jobs_;
}

JobTable::Jobs JobTable::all() const {
    std::lock_guard lk(job_mu_);
    Jobs all = *jobs_;
    all.insert(all.end(), retired_.begin(), retired_.end());
    return all;
}

std::shared_ptr<ActiveJob>
JobTable::prepare(std::string id, std::vector<std::shared_ptr<const plan::Job>> loaders) const {
    if (prepare_hook_) prepare_hook_();
    return std::make_shared<ActiveJob>(std::move(id), loaders, index_);
}

namespace {

// Under job_mu_: moves the jobs of `id` (all if empty) out of the lists.
JobTable::Jobs take_jobs(std::shared_ptr<const JobTable::Jobs>& jobs, JobTable::Jobs& retired,
                         const std::string& id) {
    JobTable::Jobs taken, kept;
    for (const auto& j : *jobs) (id.empty() || j->id == id ? taken : kept).push_back(j);
    std::erase_if(retired, [&](const auto& j) {
        if (!id.empty() && j->id != id) return false;
        taken.push_back(j);
        return true;
    });
    jobs = std::make_shared<const JobTable::Jobs>(std::move(kept));
    return taken;
}

} // namespace

JobTable::Jobs JobTable::add(std::shared_ptr<ActiveJob> prepared) {
    std::lock_guard lk(job_mu_);
    Jobs replaced = take_jobs(jobs_, retired_, prepared->id);
    Jobs next = *jobs_;
    next.push_back(std::move(prepared));
    jobs_ = std::make_shared<const Jobs>(std::move(next));
    count_range_loaders();
    return replaced;
}

JobTable::Jobs JobTable::remove(const std::string& id) {
    std::lock_guard lk(job_mu_);
    Jobs dropped = take_jobs(jobs_, retired_, id);
    count_range_loaders();
    return dropped;
}

void JobTable::count_range_loaders() {
    uint32_t n = 0;
    for (const auto& j : *jobs_)
        for (const LoaderRun& l : j->loaders) n += l.ranges != nullptr;
    range_loaders_.store(n, std::memory_order_relaxed);
}

size_t JobTable::active() const {
    std::lock_guard lk(job_mu_);
    return jobs_->size();
}

bool JobTable::is_active(const std::string& id) const {
    std::lock_guard lk(job_mu_);
    return std::ranges::any_of(*jobs_, [&](const auto& j) { return j->id == id; });
}

std::vector<uint32_t> JobTable::live_processes(const std::string& id) const {
    std::shared_ptr<ActiveJob> job;
    {
        std::lock_guard lk(job_mu_);
        for (const auto& j : *jobs_)
            if (j->id == id) job = j;
    }
    return job ? job->live_pids() : std::vector<uint32_t>{};
}

std::vector<std::string> JobTable::ids() const {
    std::lock_guard lk(job_mu_);
    std::vector<std::string> ids;
    for (const auto& j : *jobs_) ids.push_back(j->id);
    for (const auto& j : retired_) ids.push_back(j->id);
    return ids;
}

// Clairvoyant while every loader of every job is; fallback once any is not.
track::Mode JobTable::mode() const {
    Jobs all = this->all();
    if (all.empty()) return track::Mode::unregistered;
    for (const auto& j : all)
        for (const auto& l : j->loaders)
            if (l.tracker->mode() != track::Mode::clairvoyant) return track::Mode::fallback;
    return track::Mode::clairvoyant;
}

} // namespace clairfs::prefetch
