// SPDX-License-Identifier: MIT
// The registered jobs: the list the scheduler and the FUSE threads read
// (immutable, replaced whole under a leaf lock), the retired jobs status
// still shows, and which job each process's opens belong to
// (job_routing.cpp). Its locks are leaves; it calls the jobs' trackers and
// /proc, never another part of the engine.
#pragma once

#include "active_job.hpp"
#include "clairfs/track/tracker.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace clairfs::prefetch {

class JobTable {
public:
    using Jobs = std::vector<std::shared_ptr<ActiveJob>>;
    struct Process {
        uint32_t pid = 0;  // the thread group: FUSE names the opening thread
        uint32_t ppid = 0; // its parent
    };

    explicit JobTable(const index::Index& idx) : index_(idx) {}

    // Engine::prepare, replay, activate, deactivate and their neighbours
    // say what each of these does.
    std::shared_ptr<const Jobs> jobs() const;
    std::shared_ptr<ActiveJob> prepare(std::string id,
                                       std::vector<std::shared_ptr<const plan::Job>> loaders) const;
    void set_prepare_hook(std::function<void()> hook) { prepare_hook_ = std::move(hook); }
    void replay(const std::shared_ptr<ActiveJob>& prepared,
                std::span<const std::pair<index::NodeId, uint32_t>> opens);
    // Adds a prepared job, replacing one of its id (active or retired):
    // returns what was replaced, to be dropped after the caller's locks.
    [[nodiscard]] Jobs add(std::shared_ptr<ActiveJob> prepared);
    [[nodiscard]] Jobs remove(const std::string& id);
    std::vector<std::string> ids() const;
    size_t active() const;
    bool is_active(const std::string& id) const;
    // The processes of job `id` still running: those whose opens were its,
    // and its loader process (bind_loader). Empty when no active job has
    // that id, when no process is its yet, or when none of them runs any
    // more (the scheduler retires it soon). Probes each with signal 0: no
    // I/O, and no lock held meanwhile.
    std::vector<uint32_t> live_processes(const std::string& id) const;
    // Job `id`'s loader process is the one thread `tid` belongs to (its
    // registration said "from_loader" and this thread wrote it): its opens
    // and READs, and its workers', are that job's from the first, with no
    // claim to earn. Two jobs of one seed read one order, and only their
    // processes tell their reads apart. False if no active job has that id.
    bool bind_loader(const std::string& id, uint32_t tid);
    track::Mode mode() const;

    // --- routing (job_routing.cpp) --------------------------------------
    Process process_of(uint32_t tid);
    // Which job an open belongs to, and telling its tracker.
    track::Observation route_open(const Jobs& jobs, index::NodeId id, uint32_t tid);
    // An open of a file several jobs cover, by a process none has claimed.
    track::Observation route_unclaimed(const Jobs& covering, index::NodeId id, uint32_t pid,
                                       uint32_t ppid);
    std::shared_ptr<ActiveJob> bound_job(uint32_t pid, uint32_t ppid);
    void bind(const std::shared_ptr<ActiveJob>& job, uint32_t pid, uint32_t ppid, bool workers);
    // Another open (or READ) of `pid` that fit `job` alone: whether it is now the job's.
    bool claim(const ActiveJob& job, uint32_t pid);
    // Scheduler thread: retires, about once a second, the jobs whose
    // processes have all exited.
    void retire_exited();
    // Loaders over byte ranges among the jobs: while 0, a READ costs no lookup.
    uint32_t range_loaders() const { return range_loaders_.load(std::memory_order_relaxed); }

    // Keys mode, reason, warning, epoch, match_rate, opens, matched,
    // other_opens, unattributed_opens, retired, ranks and jobs of status.
    void status(nlohmann::json& out) const;

private:
    track::Observation observe_in(ActiveJob& job, index::NodeId id, uint32_t pid, uint32_t ppid,
                                  track::ObserveMode mode);
    Jobs all() const; // active, then retired
    void count_range_loaders(); // under job_mu_, after jobs_ changed

    const index::Index& index_;
    // Guards jobs_ (the pointer only: the list is immutable, replaced whole)
    // and retired_; leaf lock. A job is built before it and freed after it,
    // never under it.
    mutable std::mutex job_mu_;
    std::shared_ptr<const Jobs> jobs_ = std::make_shared<const Jobs>();
    Jobs retired_; // jobs whose processes all exited, newest last (status only)
    std::atomic<uint32_t> range_loaders_{0};
    std::function<void()> prepare_hook_;
    // Which job a process's opens belong to, when several jobs share the
    // mount: a pid, or a loader process whose workers open files. Leaf lock.
    std::mutex bind_mu_;
    std::unordered_map<uint32_t, std::weak_ptr<ActiveJob>> bound_;
    // Loader processes named by their jobs' registrations (bind_loader):
    // kept apart from bound_, which is cleared when it grows large.
    std::unordered_map<uint32_t, std::weak_ptr<ActiveJob>> loaders_;
    std::unordered_map<uint32_t, Process> processes_; // tid -> process, read once from /proc
    // An unclaimed process's run of opens that fit one job alone, and which.
    std::unordered_map<uint32_t, std::pair<const ActiveJob*, uint32_t>> streak_;
    std::atomic<uint64_t> other_opens_{0};   // files no registered loader covers
    std::atomic<uint64_t> unattributed_{0};  // several jobs cover it, none claimed the opener
    std::atomic<uint64_t> retired_count_{0}; // jobs retired since the mount
    std::chrono::steady_clock::time_point last_retire_check_{}; // scheduler thread only
};

} // namespace clairfs::prefetch
