// SPDX-License-Identifier: MIT
// Which registered job an open belongs to. With one job, every open is
// its. With several on one mount (a hyper-parameter sweep, a training and
// an evaluation job), a process is claimed by the job whose prediction its
// opens fit: the opener, and, for a DataLoader worker, the loader process
// that forked it, so the workers it forks next epoch are the job's at once.
// A job whose processes have all exited is retired.
#include "job_table.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/process_ids.hpp"

#include <algorithm>
#include <string>

namespace clairfs::prefetch {
namespace {

constexpr size_t max_routed = 65536; // pids; cleared past this (pids are reused)
// Opens in a row that fit one job and no other before a process is that
// job's. One open of another job's process lands in a job's window now and
// then (one in n / (batch_size * workers)); three in a row practically never.
constexpr uint32_t claim_after = 3;

} // namespace

// FUSE's request names the thread that opened: tf.data opens from a pool of
// threads, whose opens are one process's. Read once per thread: a loader's
// workers ask once each epoch. A thread gone before it was read counts as
// its own process.
JobTable::Process JobTable::process_of(uint32_t tid) {
    if (tid == 0) return {};
    {
        std::lock_guard lk(bind_mu_);
        if (auto it = processes_.find(tid); it != processes_.end()) return it->second;
    }
    Process p;
    const sys::ProcessIds ids = sys::process_ids(tid);
    p.pid = ids.pid;
    p.ppid = ids.ppid;
    if (p.pid == 0) p.pid = tid;
    std::lock_guard lk(bind_mu_);
    if (processes_.size() >= max_routed) processes_.clear();
    processes_[tid] = p;
    return p;
}

std::shared_ptr<ActiveJob> JobTable::bound_job(uint32_t pid, uint32_t ppid) {
    std::lock_guard lk(bind_mu_);
    for (uint32_t key : {pid, ppid}) {
        if (key <= 1) continue;
        for (const auto* map : {&loaders_, &bound_})
            if (auto it = map->find(key); it != map->end()) {
                if (auto j = it->second.lock(); j && !j->retired) return j;
            }
    }
    return nullptr;
}

bool JobTable::bind_loader(const std::string& id, uint32_t tid) {
    const Process p = process_of(tid);
    if (p.pid <= 1) return false;
    auto jobs = this->jobs();
    for (const auto& j : *jobs) {
        if (j->id != id || j->retired) continue;
        {
            std::lock_guard lk(bind_mu_);
            // One process that registers two live jobs (a sweep's driver)
            // is the loader of neither: its children are told apart by
            // their reads.
            if (auto it = loaders_.find(p.pid); it != loaders_.end()) {
                auto other = it->second.lock();
                if (other && other != j && !other->retired) {
                    loaders_.erase(it);
                    return false;
                }
            }
            // A loader process per rank and registration: this bound is
            // never reached by a real node, only by a writer in a loop.
            if (loaders_.size() >= max_routed) loaders_.clear();
            loaders_[p.pid] = j;
        }
        j->bind(p.pid); // its pids (status, retiring), never under bind_mu_
        j->loader_named.store(true, std::memory_order_relaxed);
        return true;
    }
    return false;
}

void JobTable::bind(const std::shared_ptr<ActiveJob>& job, uint32_t pid, uint32_t ppid, bool workers) {
    if (pid == 0) return;
    bool fresh = job->bind(pid);
    if (workers && ppid > 1) fresh |= job->bind(ppid);
    if (!fresh) return;
    std::lock_guard lk(bind_mu_);
    if (bound_.size() >= max_routed) bound_.clear();
    bound_[pid] = job;
    if (workers && ppid > 1) bound_[ppid] = job;
}

// The open, told to the job's loaders whose samples include the file (one,
// unless their roots overlap: the last one judges it).
track::Observation JobTable::observe_in(ActiveJob& job, index::NodeId id, uint32_t pid, uint32_t ppid,
                                        track::ObserveMode mode) {
    track::Observation o;
    LoaderRun* last = nullptr;
    for (LoaderRun& l : job.loaders)
        if (l.covering(id)) last = &l;
    for (LoaderRun& l : job.loaders) {
        if (!l.covering(id)) continue;
        track::ObserveMode m =
            &l == last || mode != track::ObserveMode::normal ? mode : track::ObserveMode::match_only;
        o = l.tracker->observe(id, track::Clock::now(), pid, ppid, m);
        if (o.matched || o.deferred) return o;
    }
    return o;
}

void JobTable::replay(const std::shared_ptr<ActiveJob>& prepared,
                    std::span<const std::pair<index::NodeId, uint32_t>> opens) {
    bool workers = false;
    for (const LoaderRun& l : prepared->loaders) workers |= l.job->spec.num_workers > 0;
    for (auto [id, tid] : opens) {
        if (!prepared->covering(id)) continue;
        auto [pid, ppid] = process_of(tid);
        track::Observation o = observe_in(*prepared, id, pid, ppid, track::ObserveMode::normal);
        if (o.matched) bind(prepared, pid, ppid, workers);
    }
}

// Another open of `pid` that fit `job` alone: whether it is now the job's.
bool JobTable::claim(const ActiveJob& job, uint32_t pid) {
    std::lock_guard lk(bind_mu_);
    if (streak_.size() >= max_routed) streak_.clear();
    auto& [who, run] = streak_[pid];
    if (who != &job) {
        who = &job;
        run = 0;
    }
    if (++run < claim_after) return false;
    streak_.erase(pid);
    return true;
}

namespace {

bool has_workers(const ActiveJob& j) {
    return std::ranges::any_of(j.loaders,
                               [](const LoaderRun& l) { return l.job->spec.num_workers > 0; });
}

} // namespace

track::Observation JobTable::route_open(const Jobs& jobs, index::NodeId id, uint32_t tid) {
    auto [pid, ppid] = process_of(tid);
    auto run = [&](const std::shared_ptr<ActiveJob>& j) {
        track::Observation o = observe_in(*j, id, pid, ppid, track::ObserveMode::normal);
        if (o.matched) bind(j, pid, ppid, has_workers(*j));
        return o;
    };
    std::shared_ptr<ActiveJob> owner = jobs.size() == 1 ? jobs.front() : bound_job(pid, ppid);
    if (owner && owner->covering(id)) return run(owner);
    // A process bound to a job that opens a file only another job covers:
    // one script's loader process forks the workers of two jobs (a
    // training and a validation loader detected as jobs of their own), so
    // through it the workers of both look bound to whichever bound it
    // last. The files decide, as for an unclaimed process.
    if (owner && jobs.size() == 1) {
        other_opens_.fetch_add(1, std::memory_order_relaxed);
        return {};
    }
    std::vector<std::shared_ptr<ActiveJob>> covering;
    for (const auto& j : jobs)
        if (j->covering(id)) covering.push_back(j);
    if (covering.empty()) {
        other_opens_.fetch_add(1, std::memory_order_relaxed);
        return {};
    }
    if (covering.size() == 1) return run(covering.front());
    return route_unclaimed(covering, id, pid, ppid);
}

// An unclaimed process: the open goes to the one job whose current
// epoch it fits (track::ObserveMode::this_epoch: a job's next epoch is
// begun by its own processes), and the process becomes that job's once
// its opens kept fitting it alone. An open that fits several jobs of
// one order (one seed's sweep) is taken by the first, claiming nothing;
// one that fits jobs whose orders differ says nothing of whose it is,
// and is taken by none: told to one of them it would move that job's
// cursors with another job's reader (as READs did: follow_read).
track::Observation JobTable::route_unclaimed(const Jobs& covering, index::NodeId id, uint32_t pid,
                                             uint32_t ppid) {
    std::vector<std::shared_ptr<ActiveJob>> fits;
    for (const auto& j : covering)
        if (j->fits_this_epoch(id, pid, ppid)) fits.push_back(j);
    if (fits.size() == 1) {
        track::Observation o = observe_in(*fits[0], id, pid, ppid, track::ObserveMode::this_epoch);
        if (o.matched && claim(*fits[0], pid)) bind(fits[0], pid, ppid, has_workers(*fits[0]));
        return o;
    }
    if (fits.size() > 1) {
        if (std::ranges::all_of(fits, [&](const auto& j) { return j->reads_as(*fits[0]); }))
            return observe_in(*fits[0], id, pid, ppid, track::ObserveMode::this_epoch);
        unattributed_.fetch_add(1, std::memory_order_relaxed);
        return {};
    }
    // Several jobs want this file and none expected this process yet: each
    // may take the open as evidence for a search of its seed, and the one
    // whose search succeeds claims the process at its next open.
    track::Observation held;
    for (const auto& j : covering) {
        track::Observation o = observe_in(*j, id, pid, ppid, track::ObserveMode::tentative);
        if (o.deferred) held = o;
    }
    if (!held.deferred) unattributed_.fetch_add(1, std::memory_order_relaxed);
    return held;
}

// Scheduler thread, about once a second.
void JobTable::retire_exited() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_retire_check_ < std::chrono::seconds(1)) return;
    last_retire_check_ = now;
    auto jobs = this->jobs();
    for (const auto& j : *jobs) {
        if (!j->exited()) continue;
        std::shared_ptr<ActiveJob> forgotten; // freed after the lock
        {
            std::lock_guard lk(job_mu_);
            Jobs kept;
            for (const auto& k : *jobs_)
                if (k != j) kept.push_back(k);
            jobs_ = std::make_shared<const Jobs>(std::move(kept));
            count_range_loaders();
            retired_.push_back(j);
            // Kept for status only; the oldest go first.
            if (retired_.size() > 16) {
                forgotten = retired_.front();
                retired_.erase(retired_.begin());
            }
        }
        j->retired = true;
        retired_count_.fetch_add(1, std::memory_order_relaxed);
        LOG_INFO("job %s retired: every process that opened its files has exited",
                 j->id.c_str());
    }
}

} // namespace clairfs::prefetch
