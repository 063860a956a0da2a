// SPDX-License-Identifier: MIT
// This node's side of a peer group (--peers): which daemon is home to each
// file (placed by a hash, then by the first epoch of a job every node
// registered alike), whether the nodes agree on their jobs (prefetching
// waits until they do), the RAM the files homed here take and may keep,
// and the choice between a home's copy and the backing store. Its lock is
// a leaf; it reads the job table and tells the scheduler, through a
// callback, when a round is due.
#pragma once

#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/peer/source_model.hpp"
#include "clairfs/prefetch/engine_options.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"
#include "clairfs/prefetch/home_placement.hpp"
#include "clairfs/track/tracker.hpp"
#include "eviction.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace clairfs::peer {
class Peers;
} // namespace clairfs::peer

namespace clairfs::prefetch {

class GroupUses;
class JobTable;
struct ActiveJob;

// Which daemon is home to each file, and what that means here. Replaced
// whole; read by fetch threads, the scheduler and status.
struct Homes {
    std::vector<int16_t> of;   // per node: the home's rank (-1: not tiered)
    std::vector<uint8_t> here; // per node: homed here
    uint64_t here_bytes = 0;   // tiered bytes of the files homed here
    uint64_t here_files = 0;
    bool pin = false; // the group's RAM budgets add up to the dataset
    HomePlacement by = HomePlacement::hash;
    std::string job;     // by schedule: the job whose first epoch placed them
    uint64_t digest = 0; // of `of`: equal on every member that placed alike
};

class PeerHomes {
public:
    // `tier_size`: per node, its size if the tiers take it, else not_tiered;
    // `mem`: this node's RAM budget.
    PeerHomes(const index::Index& idx, const std::vector<uint32_t>& tier_size,
              const cache::RamTier& ram, uint64_t mem, unsigned fetch_threads,
              const JobTable& jobs);
    ~PeerHomes();
    PeerHomes(const PeerHomes&) = delete;
    PeerHomes& operator=(const PeerHomes&) = delete;

    // Before the engine starts: the group, and what the homes ask of the
    // engine. Homes are placed by hash at once.
    struct Calls {
        std::function<void()> round_due;     // the hold ended, or homes are to be placed
        std::function<std::string()> summary; // what `clairfs status --cluster` shows of this node
    };
    void attach(std::unique_ptr<peer::Peers> peers, Calls calls);
    bool on() const { return peers_ != nullptr; }
    void start();
    void stop();
    bool settled() const;

    // --- agreement -------------------------------------------------------
    void share_registrations(std::map<std::string, std::string> keys,
                             std::map<std::string, std::vector<uint32_t>> ranks);
    // After this node's or a peer's registrations changed: abandons the
    // prediction of every job whose keys differ on some node.
    void check_agreement();
    // A job is being activated: its first round waits for the other nodes'
    // registrations (share_registrations), agreement_grace at most.
    void hold();
    bool holding() const {
        return pending_.load() && std::chrono::steady_clock::now() < hold_until_.load();
    }
    // Scheduler thread: the placements check_agreement() queued.
    void place_due_homes();

    // --- fetching ----------------------------------------------------------
    std::shared_ptr<const Homes> homes() const { return homes_.load(); }
    // The file from its home, when that is another daemon that is alive and
    // the model says it is the faster source: an empty blob otherwise, and
    // the caller reads the backing store.
    FetchResult fetch(index::NodeId id, bool demanded);
    // Every backing-store read, timed for the source model.
    peer::SourceRate& backing_rate() { return backing_rate_; }

    // --- the RAM tier ------------------------------------------------------
    // While pinned, the room the files homed here will still take: not free
    // for files from elsewhere.
    uint64_t reserved(const Homes& homes) const;
    // A file homed here entered the tier, or left it (`freed` bytes).
    void held(uint64_t bytes) { homed_held_.fetch_add(bytes); }
    void let_go(uint64_t freed) { homed_held_.fetch_sub(std::min(freed, homed_held_.load())); }
    // With the group's RAM short of the dataset: the next use of a file
    // homed here by any node's rank, for eviction; empty when the homes
    // are not from a job's schedule (or its ranks are not followed now).
    // Scheduler thread.
    GroupDue group_next_use(const Homes& homes, const std::vector<std::shared_ptr<ActiveJob>>& jobs,
                            const std::vector<std::vector<track::Snapshot>>& snaps);

    // Key "peers" of status (null without peers).
    void status(nlohmann::json& out) const;

private:
    Homes make_homes(std::vector<int16_t> of, HomePlacement by) const;
    void plan_homes(const std::string& job_id, const std::map<int, std::vector<uint32_t>>& ranks);
    int home_of(index::NodeId id) const;
    struct Judged; // what the peers' notes say of this node's jobs
    static void judge_note(int rank, const std::string& text,
                           const std::map<std::string, std::string>& own, Judged& out);
    bool queue_placements(Judged& judged, const std::map<std::string, std::string>& own);
    void abandon(const std::map<std::string, std::string>& broken);

    const index::Index& index_;
    const std::vector<uint32_t>& tier_size_;
    const cache::RamTier& ram_;
    const uint64_t mem_;
    const unsigned fetch_threads_;
    const JobTable& jobs_;
    std::unique_ptr<peer::Peers> peers_;
    Calls calls_;
    std::atomic<std::shared_ptr<const Homes>> homes_;
    std::unique_ptr<GroupUses> group_uses_; // scheduler thread only
    // Of those homed here, the bytes the RAM tier holds now.
    std::atomic<uint64_t> homed_held_{0};
    // The backing store's measured cost per whole file, against which a
    // peer's is weighed (peer/source_model.hpp); and how often it won.
    peer::SourceRate backing_rate_;
    std::atomic<uint64_t> chose_backing_{0};
    // This node's agreed keys per job id, as last shared; jobs every member
    // registered alike, by id, with each node's ranks, for plan_homes on the
    // scheduler thread; and the line status shows about the agreement.
    mutable std::mutex mu_; // leaf
    std::map<std::string, std::string> own_keys_;
    std::map<std::string, std::vector<uint32_t>> own_ranks_;
    std::map<std::string, std::map<int, std::vector<uint32_t>>> homes_due_;
    std::string agreement_;
    // With peers, a registration's prefetches wait until every live peer
    // registered the job alike, or agreement_grace after it: homes that
    // move after files were read would read them again.
    static constexpr std::chrono::seconds agreement_grace{10};
    std::atomic<bool> pending_{false};
    std::atomic<std::chrono::steady_clock::time_point> hold_until_{};
};

} // namespace clairfs::prefetch
