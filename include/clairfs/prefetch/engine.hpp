// SPDX-License-Identifier: MIT
// Everything between a FUSE request and the backing store: the RAM tier,
// the fetch pool, and, while jobs are registered, their trackers and the
// scheduler thread that prefetches in predicted order and evicts by next
// use across all of them. Without a registration (or in fallback) files are
// kept on first touch and never evicted once the budget is full.
#pragma once

#include "clairfs/cache/backing_store.hpp"
#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/cache/tier.hpp"
#include "clairfs/config/mount_choices.hpp"
#include "clairfs/peer/source_model.hpp"
#include "clairfs/plan/job.hpp"
#include "clairfs/prefetch/chunk_store.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"
#include "clairfs/prefetch/home_placement.hpp"
#include "clairfs/sys/bounded_calls.hpp"
#include "clairfs/track/tracker.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace clairfs::peer {
class Peers;
struct ServeResult;
} // namespace clairfs::peer

namespace clairfs::prefetch {

class SsdWriter;
class RangeFollow;
class GroupUses;

struct EngineOptions {
    uint64_t mem = 0;            // RAM tier budget in bytes; 0 disables the tiers
    unsigned fetch_threads = 16; // backing-store readers
    uint64_t max_file = 0;       // larger files bypass the tiers; 0 = mem / 16
    bool stage = false;          // begin a stage-in pass at start()
    // --io-timeout: the longest a reader waits for a backing-store or SSD
    // read; 0 = no bound.
    std::chrono::milliseconds io_timeout{60000};
    unsigned fuse_threads = 16; // readers that may wait on a backing call at once
    // --handover: a file the kernel's page cache holds whole leaves the
    // RAM tier (cache/ram_tier.hpp, hand_over()).
    bool handover = false;
    // --push-ahead: the files due next go into the kernel's page cache
    // from the scheduler thread (Engine::push_ahead).
    bool push_ahead = false;
    // --open-push: at its open, a file the RAM tier holds goes into the
    // kernel's page cache unless the kernel kept it (Engine::push_on_open).
    bool open_push = false;
    // --one-copy: when the last open of a file the RAM tier holds is
    // released, its pages leave the kernel's page cache, so RAM holds its
    // bytes once (Engine::drop_if_last): never, always, or (automatic)
    // while the tier's bytes would take more than half the page cache's
    // room (Engine::weigh_room).
    using When = config::When;
    using OneCopy = When;
    OneCopy one_copy = OneCopy::never;
    // --drop-behind: a sequential reader's pages of files held by chunk
    // leave the kernel's page cache once passed (ChunkStore::read_done):
    // never, always, or (automatic) while those files would take more
    // than half the page cache's room (Engine::weigh_chunk_room). Needs
    // set_range_dropper.
    When drop_behind = When::never;
    // --opens fanotify: opens and closes are told after the fact
    // (watched_open, watched_close), with no OPEN to pin or push at; the
    // files due next are pushed ahead (push_ahead must be on), and a drop
    // at the last close is the caller's (it holds a descriptor of the file).
    bool watch_opens = false;
    // --chunk-size: files above max_file are held by chunks of this many
    // bytes (prefetch/chunk_store.hpp); 0 reads them through range by range.
    uint32_t chunk_size = 0;
    // The part of `mem` their chunks take, set by the engine from the
    // dataset (Engine::split_budget); `mem` is then the rest.
    uint64_t chunk_mem = 0;
};

// What an OPEN did about the kernel's page cache (Engine::push_on_open),
// for its RELEASE to learn from.
enum class OpenPush : uint8_t {
    none,    // --no-open-push, or nothing to learn (a file's first open)
    pushed,  // the bytes were pushed
    watched, // not pushed: the open's READs show whether the kernel kept it
};

// Stage-in as status reports it.
struct StageStatus {
    // idle, running, done, full (the tier ran out of room), incomplete (some
    // files could not be read or written: see backing.errors, ssd.errors)
    const char* state = "idle";
    uint64_t done_bytes = 0;    // dataset bytes the target tier holds
    uint64_t total_bytes = 0;   // bytes of every file the tiers take
    double rate = 0;            // bytes per second since the pass began
    double eta_seconds = -1;    // -1 when unknown
    const char* target = "ram"; // "ssd" when there is an SSD tier
};

class Engine {
public:
    // Starts no thread: the daemon forks after the mount, and threads do
    // not survive a fork. start() does, from the FUSE init callback.
    Engine(const index::Index& idx, int backing_fd, EngineOptions opt);
    ~Engine();
    void start();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    // Joins every thread the engine started; idempotent. The FUSE layer
    // calls it before its session goes, since the pusher writes to it.
    void stop();

    // Copies a file's bytes into the kernel's page cache for its inode
    // (FUSE_NOTIFY_STORE); 0 or -errno. Set before start().
    using Pusher = std::function<int(index::NodeId id, const cache::Blob& bytes)>;
    void set_pusher(Pusher push) { push_ = std::move(push); }
    // Copies bytes of a file into the kernel's page cache at an offset
    // (FUSE_NOTIFY_STORE); 0 or -errno. The samples of a ranges job due
    // next go there ahead of its reads (Engine::push_ranges): an mmap
    // reader then takes no page fault for them. Set before start().
    using RangePusher =
        std::function<int(index::NodeId id, uint64_t off, const char* bytes, size_t size)>;
    void set_range_pusher(RangePusher push) { push_range_ = std::move(push); }
    // Drops bytes of a file from the kernel's page cache
    // (FUSE_NOTIFY_INVAL_INODE over a range); 0 or -errno. A ranges job's
    // samples are dropped once read, so that the pages pushed ahead are not
    // what the kernel evicts first (Engine::drop_read_ranges). Set before start().
    using RangeDropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;
    void set_range_dropper(RangeDropper drop) { drop_range_ = std::move(drop); }
    // Drops a file's pages from the kernel's page cache
    // (FUSE_NOTIFY_INVAL_INODE); 0 or -errno. Set before start() when the
    // kernel handles opens itself (--kernel-opens): the first READ of a
    // file then stands for its open, and a file whose pages outlived its
    // last use would be read again without a READ, unseen by the tracker.
    // While a job is registered, every file read is dropped soon after
    // (src/prefetch/scheduler.cpp says when).
    using Dropper = std::function<int(index::NodeId id)>;
    void set_dropper(Dropper drop) { drop_ = std::move(drop); }
    // The same notification, for evicting a file the RAM tier handed over
    // to the kernel (--handover): its pages are the tier's copy, and room
    // is made by dropping them. Set before start().
    void set_invalidator(Dropper inval) { inval_ = std::move(inval); }
    // Weighs the room the page cache has, for --one-copy auto
    // (config::page_cache_room() unless set: a unit test sets its own).
    // Set before start().
    using RoomProbe = std::function<uint64_t()>;
    void set_room_probe(RoomProbe probe) { room_probe_ = std::move(probe); }
    // Told of every open while no job is registered, and of every open of
    // a file no registered job covers (job detection: control/detector.hpp;
    // the observer decides which it wants); called on the FUSE thread, so
    // it must only queue. Set before start().
    using OpenObserver = std::function<void(index::NodeId id, uint32_t pid)>;
    void set_open_observer(OpenObserver o) { observe_ = std::move(o); }
    // Like stop(), but gives up after `bound` on fetches stuck in a hung
    // read: false then, and the engine must never be destroyed (its stuck
    // threads still refer to it); the daemon exits around it.
    bool stop_within(std::chrono::milliseconds bound);
    // After a stop_within() that gave up: releases what a new mount needs
    // (the SSD cache's lock) before the daemon exits around stuck threads.
    void release_for_exit();
    // Before start(): the SSD tier, between RAM and the backing store.
    void attach_ssd(std::unique_ptr<cache::Tier> ssd);
    // Before start(): the other daemons of this node's group (--peers).
    // Files homed elsewhere are fetched from their home before the backing
    // store; files homed here are kept ahead of any other file and served
    // to the others. start() starts them, stop() says bye.
    void attach_peers(std::unique_ptr<peer::Peers> peers);
    // Whether the group has formed as far as it will (true without peers).
    bool peers_settled() const;
    // This node's registered jobs, by id, as the keys every node of a peer
    // group must agree on (control::agreed_keys). Sent to the peers; a job
    // another node registered under the same id with other keys puts this
    // node's job in fallback, and the other node's likewise.
    // `ranks`: each job's local ranks (its first loader's), from which the
    // group can place each file with the node that reads it first.
    void share_registrations(std::map<std::string, std::string> keys,
                             std::map<std::string, std::vector<uint32_t>> ranks = {});

    // --- the FUSE side -------------------------------------------------
    // Whether reads of this file are served whole from the tiers (false:
    // by chunk, or read through to the backing store range by range).
    bool tiered(const index::Node& n) const;
    // The files too large to be held whole, by chunk; null with
    // --chunk-size 0, --mem 0, or no such file.
    ChunkStore* chunks() { return chunks_.get(); }
    bool chunked(index::NodeId id) const { return chunks_ && chunks_->covers(id); }
    // A READ of [off, off + size) of a regular file by thread `tid`: tells
    // the jobs whose samples are byte ranges of it (layout "ranges") where
    // their loaders are (prefetch/range_follow.hpp). One atomic load while
    // no such job is registered.
    void read_range(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid) {
        if (range_loaders_.load(std::memory_order_relaxed) != 0) follow_read(id, off, size, tid);
    }
    // Before start(): the SSD tier of the chunks.
    void attach_chunk_ssd(std::unique_ptr<cache::Tier> ssd) {
        if (chunks_) chunks_->attach_ssd(std::move(ssd));
    }
    // An open() of a regular file by process `pid`: tells the tracker and wakes the
    // scheduler; returns the file's bytes if a tier holds them, so the open
    // pins them against eviction for its lifetime.
    cache::BlobRef opened(index::NodeId id, uint32_t pid);
    // The whole file for a READ: a RAM hit, else a demand fetch (joining a
    // prefetch in flight). 0 or -errno. A READ of a file handed to the
    // kernel means the kernel dropped (some of) its pages: counted, and the
    // bytes come from the SSD tier or the backing store again.
    int bytes_of(index::NodeId id, cache::BlobRef& out);
    // An open of a tiered file was released after its READs returned
    // `served` bytes of it: if that is the whole file, the kernel's page
    // cache holds it, and the RAM tier may hand it over.
    //
    // `how` is what push_on_open() did at that open: a watched open that
    // needed no READ shows the kernel kept the file since it last had it.
    //
    // Called for every OPEN that push_on_open() saw, also one whose reply
    // failed: with --one-copy it is the last release of a file the RAM
    // tier holds that drops the kernel's pages of it. After the reply:
    // the drop waits on the file's page locks.
    void released(index::NodeId id, uint64_t served, OpenPush how = OpenPush::none);
    // At an OPEN, with the bytes opened() pinned (null if the RAM tier lacks
    // them): pushes them into the kernel's page cache before the reply, so
    // the job's reads find every page there and make no READ, and no
    // GETATTR either (each READ invalidates the inode's atime, which the
    // next fstat then asks the daemon for). Not while the kernel is seen to
    // keep the files it had (3 in 4 of the watched opens lately needed no
    // READ): a push would copy over pages it holds. 1 open in 16 is
    // watched rather than pushed, to keep seeing that. With --one-copy the
    // kernel cannot have kept a file the tier holds (its last release
    // dropped the pages), so every such open is pushed.
    OpenPush push_on_open(index::NodeId id, const cache::BlobRef& bytes);
    // --opens fanotify (fuse/open_watch.hpp): an open the kernel made by
    // itself, told after the fact, on the watcher's thread. Like opened(),
    // but nothing is pinned: the job may have read the file already.
    void watched_open(index::NodeId id, uint32_t pid);
    // Its close: whether the file's pages should leave the kernel's page
    // cache now (--one-copy, the last close of a file the RAM tier holds).
    // The caller then drops them itself, without touching the attributes
    // as FUSE_NOTIFY_INVAL_INODE would, and tells close_dropped().
    bool watched_close(index::NodeId id);
    void close_dropped(bool ok);
    // --opens fanotify: a READ at offset 0, so the kernel lacked the file's
    // first page at this open (it dropped the file, or was never given it).
    void read_from_start(index::NodeId id);
    // The kernel forgot the file's inode, and its pages with it.
    void forgotten(index::NodeId id);
    cache::BackingStore& backing() { return backing_; }
    // Backing-store calls a FUSE thread makes itself (reads of files the
    // tiers do not take), each bounded by --io-timeout.
    sys::BoundedCalls& backing_calls() { return backing_calls_; }
    std::chrono::milliseconds io_timeout() const { return opt_.io_timeout; }
    // Counts and logs a FUSE-side backing call that timed out.
    void note_io_timeout(const index::Node& n);

    // --- the control side ----------------------------------------------
    struct Active; // a registered job's loaders, trackers and plans (src/prefetch/active_job.hpp)
    using Jobs = std::vector<std::shared_ptr<Active>>;
    // Builds job `id` of validated loaders for activate(): their planners,
    // and trackers with each local rank's first two epochs (a second or more
    // for millions of samples). Takes no lock of the engine's; call it
    // holding none that an open or a status read needs.
    std::shared_ptr<Active> prepare(std::string id,
                                    std::vector<std::shared_ptr<const plan::Job>> loaders) const;
    // Tells a prepared job's trackers of opens made before it was
    // registered (a detected job: the opens detection saw, each process's
    // in its order), so its workers' cursors stand where the job is.
    void replay(const std::shared_ptr<Active>& prepared,
                std::span<const std::pair<index::NodeId, uint32_t>> opens);
    // Starts predicting for a prepared job, next to the other jobs; a job
    // of the same id (active or retired) is replaced. Returns what was
    // replaced: drop it after your own locks, since the last reference
    // frees its plans and joins its planner threads.
    //
    // `late` (a detected job) returns the opens the observer queued since
    // the caller last looked: they are replayed and the job made visible
    // under observe_mu_, so every open reaches either the observer (and so
    // `late`) or the job's trackers, none neither. One lost mid-epoch open
    // puts a worker's cursor out of reach of its next opens.
    using Opens = std::vector<std::pair<index::NodeId, uint32_t>>;
    [[nodiscard]] Jobs activate(std::shared_ptr<Active> prepared,
                                const std::function<Opens()>& late = {});
    // Removes job `id` (every job if empty); with no job left, back to
    // unregistered: first-touch caching, nothing prefetched. Returns the
    // jobs dropped, as activate() does.
    [[nodiscard]] Jobs deactivate(const std::string& id = {});
    // The ids of the jobs registered, active or retired.
    std::vector<std::string> job_ids() const;
    // How many are active (not retired: some process that opened their
    // files is alive).
    size_t active_jobs() const;
    // Whether job `id` is registered and not retired.
    bool is_active(const std::string& id) const;
    // The processes of job `id` still running: those whose opens were its,
    // and its loader process (bind_loader). Empty when no active job has
    // that id, when no process is its yet, or when none of them runs any
    // more (the scheduler retires it soon). Probes each with signal 0: no
    // I/O, and no lock of the engine's held meanwhile.
    std::vector<uint32_t> live_processes(const std::string& id) const;
    // Job `id`'s loader process is the one thread `tid` belongs to (its
    // registration said "from_loader" and this thread wrote it): its opens
    // and READs, and its workers', are that job's from the first, with no
    // claim to earn. Two jobs of one seed read one order, and only their
    // processes tell their reads apart. False if no active job has that id.
    bool bind_loader(const std::string& id, uint32_t tid);
    // Tests: runs at the start of every prepare(), on the registering
    // thread, so a test can hold a registration's build where it likes.
    void set_prepare_hook(std::function<void()> hook) { prepare_hook_ = std::move(hook); }
    // Starts a stage-in pass (or a new one, in the current predicted order,
    // if one is running): every file the tiers take is copied into the SSD
    // tier (RAM without one) in the background, behind every prefetch.
    void stage();
    StageStatus stage_status() const;
    track::Mode mode() const;
    // Fills status keys: mode, reason, epoch, match_rate, backing, ram,
    // stall_seconds, prefetch, ranks (see clairfs-control(5)).
    void status(nlohmann::json& out) const;

    // Splits --mem between whole files and chunks, in proportion to the
    // dataset's bytes in each (chunks get at least 8 chunks, or the large
    // files' bytes if less, but not above half of --mem for that; none at
    // all if that is under 4 chunks); fixes max_file.
    static EngineOptions split_budget(const index::Index& idx, EngineOptions opt);

private:
    void admit(index::NodeId id, const FetchResult& r, bool demanded);
    FetchResult read_whole(index::NodeId id, bool demanded);
    FetchResult read_ssd(index::NodeId id);     // empty blob: not there
    FetchResult read_local(index::NodeId id);   // SSD, else the backing store
    FetchResult read_backing(index::NodeId id); // timed for the source model
    // A peer's get, on a peer server thread: the RAM tier's copy, or a
    // demand fetch (SSD, else the backing store) that admit() then keeps.
    peer::ServeResult serve_peer(index::NodeId id);
    // After this node's or a peer's registrations changed: abandons the
    // prediction of every job whose keys differ on some node.
    void check_agreement();
    std::string summary_for_peers() const;
    // Whether the RAM tier holds on to `id` whatever the local ranks need:
    // a file homed here, while the group's RAM together holds the dataset.
    // Which daemon is home to each file, and what that means here. Built
    // from a hash of each file when the peers are attached; rebuilt from
    // the registered schedules once every node agreed on a DistributedSampler
    // job, if nothing has been read yet (Engine::plan_homes).
    struct Homes {
        std::vector<int16_t> of;   // per node: the home's rank
        std::vector<uint8_t> here; // per node: homed here
        uint64_t here_bytes = 0;   // tiered bytes of the files homed here
        uint64_t here_files = 0;
        bool pin = false; // the group's RAM budgets add up to the dataset
        HomePlacement by = HomePlacement::hash;
        std::string job;     // by schedule: the job whose first epoch placed them
        uint64_t digest = 0; // of `of`: equal on every member that placed alike
    };
    std::shared_ptr<const Homes> homes() const { return homes_.load(); }
    Homes make_homes(std::vector<int16_t> of, HomePlacement by) const;
    void plan_homes(const std::string& job_id, const std::map<int, std::vector<uint32_t>>& ranks);
    void place_due_homes();
    // With the group's RAM short of the dataset: the next use of a file
    // homed here by any node's rank, for eviction; empty when the homes
    // are not from a job's schedule (or its ranks are not followed now).
    std::function<uint64_t(index::NodeId)>
    group_next_use(const Homes& homes, const Jobs& jobs,
                   const std::vector<std::vector<track::Snapshot>>& snaps);
    int home_of(index::NodeId id) const;
    void ssd_status(nlohmann::json& out) const;
    void stage_loop();
    void stage_pass();
    // How stage_chunks() ended.
    enum class ChunksStaged : uint8_t { all, full, interrupted };
    ChunksStaged stage_chunks(ChunkStore& chunks, const std::function<bool()>& interrupted,
                              const std::function<void(std::chrono::milliseconds)>& pause);
    std::vector<index::NodeId> stage_order();
    bool staged(index::NodeId id) const;
    uint64_t stage_room(uint64_t planned) const; // prefetch::stage_room of the target tier
    const cache::Tier& stage_target() const;
    uint64_t target_bytes() const;
    void schedule_loop();
    void follow_read(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid);
    void schedule_round(const Jobs& jobs);
    // The first chunks of the files held by chunk that the jobs open next.
    void prefetch_shard_heads(const std::vector<std::vector<const track::Snapshot*>>& views);
    // The chunks holding the samples the ranks of ranges jobs read next,
    // soonest first, as far as the chunks' read-ahead budget goes
    // (src/prefetch/range_reads.cpp).
    void prefetch_ranges(const Jobs& jobs, const std::vector<std::vector<track::Snapshot>>& snaps);
    // Every scheduler wake-up while a ranges job is registered: snapshots
    // its loaders, then lend_reach(), prefetch_ranges(), push_ranges() and
    // drop_read_ranges().
    void ranges_round(const Jobs& jobs);
    // The samples each worker reads in its next three batches whose chunks
    // RAM holds, into the kernel's page cache (each once an epoch).
    void push_ranges(const Jobs& jobs, const std::vector<std::vector<track::Snapshot>>& snaps);
    // Pushes `sample`'s pages from offset `from` on, for epoch `tag` - 1.
    void push_rest(RangeFollow& rf, uint32_t sample, uint64_t from, uint32_t tag);
    void drop_read_ranges(const Jobs& jobs, const std::vector<std::vector<track::Snapshot>>& snaps);
    // Tells each ranges loader where the others of its order are (Tracker::lend_reach).
    void lend_reach(const Jobs& jobs, const std::vector<std::vector<track::Snapshot>>& snaps);
    void count_push(int rc, uint64_t bytes);
    // Loaders over byte ranges among the jobs: while 0, a READ costs no lookup.
    std::atomic<uint32_t> range_loaders_{0};
    void count_range_loaders(); // under job_mu_, after jobs_ changed
    void snapshot_jobs(const Jobs& jobs, std::vector<std::vector<track::Snapshot>>& snaps,
                       std::vector<std::vector<const track::Snapshot*>>& views);
    void push_ahead(const std::vector<index::NodeId>& next);
    void drop_pages(bool following);
    bool round_due(const Jobs& jobs);
    void retire_exited();
    std::shared_ptr<const Jobs> jobs() const;
    uint64_t lead_items(const Jobs& jobs) const;
    // Which job an open belongs to, and telling its tracker.
    track::Observation route_open(const Jobs& jobs, index::NodeId id, uint32_t pid);
    track::Observation observe_in(Active& job, index::NodeId id, uint32_t pid, uint32_t ppid,
                                  track::ObserveMode mode);
    std::shared_ptr<Active> bound_job(uint32_t pid, uint32_t ppid);
    void bind(const std::shared_ptr<Active>& job, uint32_t pid, uint32_t ppid, bool workers);
    bool claim(const Active& job, uint32_t pid);
    struct Process {
        uint32_t pid = 0;  // the thread group: FUSE names the opening thread
        uint32_t ppid = 0; // its parent
    };
    Process process_of(uint32_t tid);
    void job_status(const Active& job, nlohmann::json& out) const;

    const index::Index& index_;
    EngineOptions opt_;
    cache::BackingStore backing_;
    sys::BoundedCalls backing_calls_;
    cache::RamTier ram_;
    std::unique_ptr<cache::Tier> ssd_;  // the local-SSD tier, or null
    std::unique_ptr<ChunkStore> chunks_; // files above max_file, or null
    std::unique_ptr<SsdWriter> writer_; // after ssd_: drains into it when destroyed
    std::unique_ptr<peer::Peers> peers_; // before the pool: its threads fetch from peers
    std::unique_ptr<FetchPool> pool_;   // after the tiers: its threads admit into them
    // Null without peers; replaced whole, read by fetch threads, the
    // scheduler and status.
    std::atomic<std::shared_ptr<const Homes>> homes_;
    std::unique_ptr<GroupUses> group_uses_; // scheduler thread only
    // Of those, held in the RAM tier now (admit() adds, evictions
    // subtract). While pinned, room beyond the homed files' is all a file
    // from elsewhere may take.
    std::atomic<uint64_t> homed_held_{0};
    // The backing store's measured cost per whole file, against which a
    // peer's is weighed (peer/source_model.hpp); and how often it won.
    peer::SourceRate backing_rate_;
    std::atomic<uint64_t> chose_backing_{0};
    // This node's agreed keys per job id, as last shared; and the line
    // status shows about the agreement. Leaf lock.
    mutable std::mutex agree_mu_;
    std::map<std::string, std::string> own_keys_;
    std::map<std::string, std::vector<uint32_t>> own_ranks_;
    // Jobs every member registered alike, by id: each node's ranks, for
    // plan_homes on the scheduler thread.
    std::map<std::string, std::map<int, std::vector<uint32_t>>> homes_due_;
    // With peers, a registration's prefetches wait until every live peer
    // registered the job alike, or agreement_grace after it: homes that
    // move after files were read would read them again.
    static constexpr std::chrono::seconds agreement_grace{10};
    std::atomic<bool> agreement_pending_{false};
    std::atomic<std::chrono::steady_clock::time_point> hold_until_{};
    bool holding() const {
        return agreement_pending_.load() && std::chrono::steady_clock::now() < hold_until_.load();
    }
    bool force_round_ = false; // under wake_mu_: the hold ended, run a round
    std::string agreement_;

    // Guards jobs_ (the pointer only: the list is immutable, replaced whole)
    // and retired_; leaf lock. A job is built before it and freed after it,
    // never under it.
    mutable std::mutex job_mu_;
    std::shared_ptr<const Jobs> jobs_ = std::make_shared<const Jobs>();
    Jobs retired_; // jobs whose processes all exited, newest last (status only)
    std::function<void()> prepare_hook_;
    // Which job a process's opens belong to, when several jobs share the
    // mount: a pid, or a loader process whose workers open files. Leaf lock.
    std::mutex bind_mu_;
    std::unordered_map<uint32_t, std::weak_ptr<Active>> bound_;
    // Loader processes named by their jobs' registrations (bind_loader):
    // kept apart from bound_, which is cleared when it grows large.
    std::unordered_map<uint32_t, std::weak_ptr<Active>> loaders_;
    std::unordered_map<uint32_t, Process> processes_; // tid -> process, read once from /proc
    // An unclaimed process's run of opens that fit one job alone, and which.
    std::unordered_map<uint32_t, std::pair<const Active*, uint32_t>> streak_;
    std::atomic<uint64_t> other_opens_{0};   // files no registered loader covers
    std::atomic<uint64_t> unattributed_{0};  // several jobs cover it, none claimed the opener
    std::atomic<uint64_t> retired_count_{0}; // jobs retired since the mount

    // The scheduler thread's own state, per node: the round in which it last
    // fell inside the window of files worth holding, and where.
    std::vector<uint32_t> in_window_;
    std::vector<uint32_t> window_index_; // valid where in_window_ is this round
    // Per node: its size if the tiers take it, else not_tiered. One dense
    // load per window position instead of a walk into the index's nodes.
    static constexpr uint32_t not_tiered = UINT32_MAX;
    std::vector<uint32_t> tier_size_;
    uint32_t round_ = 0;
    const Jobs* jobs_seen_ = nullptr; // the job list of the last round
    bool pages_dropped_ = false;      // since the first job was registered
    // What the last round saw, to tell whether the next one can change
    // anything (Engine::round_due).
    bool ran_ = false;
    bool wanted_more_ = false; // the prefetch queue filled before the window did
    uint64_t last_opens_ = 0;
    uint64_t last_landed_ = 0;
    uint64_t lead_target_ = 0; // lead_items() of the last round
    std::chrono::steady_clock::time_point last_retire_check_{};

    std::mutex wake_mu_; // scheduler sleep; leaf lock
    std::condition_variable wake_cv_;
    bool wake_ = false;
    bool push_waiting_ = false; // under wake_mu_: files landed for a push (to_push_)
    bool ranges_waiting_ = false; // under wake_mu_: a ranges job's READ was told
    bool stopping_ = false;
    std::atomic<uint64_t> lead_{0}; // samples ready ahead of the slowest rank
    // Wake-up accounting: a round only runs when the ranks moved on enough
    // to change what the window holds, or when a round that could not queue
    // everything it wanted sees a fetch land.
    std::atomic<uint64_t> matched_opens_{0};
    std::atomic<uint64_t> landed_{0};
    // The matched-open count at which the next round is due, and whether
    // the last round wants to be woken by the next fetch that lands.
    std::atomic<uint64_t> round_at_{0};
    std::atomic<uint64_t> wakeups_{0}; // the scheduler's, not counting its idle ticks
    std::atomic<bool> refill_wanted_{false};
    uint64_t round_step() const;
    void wake_scheduler();
    void wake_to_push(); // wake_scheduler(), and end its rest between rounds
    // Page-cache pushes: per node, the open count at its last open and just
    // after its last push. A file is pushed again only once opened since.
    Pusher push_;
    RangePusher push_range_;
    RangeDropper drop_range_;
    std::atomic<uint64_t> range_pushes_{0}, range_push_bytes_{0}, range_push_errors_{0};
    // push_rest()s not made because half the FUSE threads were pushing
    std::atomic<uint64_t> range_push_busy_{0};
    std::atomic<uint64_t> range_drops_{0}; // samples dropped from the page cache once read
    std::atomic<uint64_t> opens_{0}; // opens of files the tiers take
    std::atomic<uint64_t> open_bytes_{0}; // and the sizes of their files
    std::unique_ptr<std::atomic<uint64_t>[]> last_open_;
    std::unique_ptr<uint64_t[]> pushed_at_; // scheduler thread only
    // Pushed since its last open: the pages are there already (or the
    // kernel chose to drop them, which a READ then repairs).
    bool pushed_for_use(index::NodeId id) const {
        return pushed_at_[id] > last_open_[id].load(std::memory_order_relaxed);
    }
    // --opens fanotify: per node, due within reach when a round found the
    // RAM tier without it; admit() queues it when it lands, and the
    // scheduler pushes it (push_landed). Not the fetch thread itself: a
    // push waits for the pages a READ in flight holds locked, and that
    // READ may be waiting for this very fetch.
    std::unique_ptr<std::atomic<bool>[]> push_on_land_;
    std::mutex landed_mu_; // leaf; guards to_push_
    std::vector<index::NodeId> to_push_;
    void push_one(index::NodeId id, const cache::Blob& b);
    void push_landed(); // scheduler thread
    std::atomic<uint64_t> pushes_{0}, push_skipped_{0}, push_errors_{0};
    // Pushes at open: per node, whether it was opened since the mount
    // (null without --open-push); how often the kernel kept the files of
    // watched opens lately, in 1/rate_one (Engine::released).
    std::unique_ptr<std::atomic<bool>[]> open_seen_;
    std::atomic<uint32_t> kept_rate_{0};
    // --opens fanotify: per node, 1 while a file due was left unpushed to
    // see whether the kernel kept it, 2 once a READ at 0 showed it did not
    // (Engine::push_due); learnt from at its close.
    std::unique_ptr<std::atomic<uint8_t>[]> watch_state_;
    bool push_due(index::NodeId id); // scheduler thread (atomics only)
    void learn_kept(bool kept);
    bool watch_next(); // the rule push_on_open() and push_due() share
    uint64_t watch_every_now() const; // its sampling: 1 in this many
    static constexpr uint32_t rate_one = 1024, rate_span = 32;
    // A watched file the kernel dropped costs a READ round trip, so once
    // the kernel is known to drop nearly all (rate below 1/4 over at least
    // two spans of watched files) 1 in 64 is watched rather than 1 in 16.
    static constexpr uint64_t watch_every = 16, watch_every_dropping = 64;
    std::atomic<uint64_t> kept_learnt_{0}; // watched files learnt from
    // Largest file put into the kernel's page cache: its pages would crowd
    // out many small files', and its READs are few and large anyway.
    static constexpr uint64_t max_push = 16 << 20;
    std::atomic<uint64_t> open_pushes_{0}, open_watched_{0}, open_kept_{0}, open_probe_{0};
    std::atomic<uint64_t> open_busy_{0}; // pushes not made: half the FUSE threads were pushing
    std::atomic<unsigned> pushing_{0};
    // --one-copy: per node, the opens not yet released (null when never);
    // whether last releases drop pages now; the page cache's room when
    // last weighed (UINT64_MAX: unknown), and when; files whose pages were
    // dropped at their last release, and failures.
    std::unique_ptr<std::atomic<uint32_t>[]> open_count_;
    std::atomic<bool> dropping_{false};
    std::atomic<uint64_t> room_{UINT64_MAX};
    std::chrono::steady_clock::time_point room_at_{}; // scheduler thread only
    std::atomic<uint64_t> close_drops_{0}, close_drop_errors_{0}, one_copy_switches_{0};
    void drop_if_last(index::NodeId id);
    void weigh_room(); // scheduler thread
    void weigh_chunk_room(uint64_t room); // from weigh_room
    RoomProbe room_probe_;
    // Hand-over (EngineOptions::handover): on until the kernel is seen to
    // drop what it was handed (note_kernel_miss()).
    std::atomic<bool> handover_{false};
    std::atomic<uint64_t> kernel_misses_{0}, kernel_forgets_{0}, evictions_from_kernel_{0};
    mutable std::mutex handover_mu_; // leaf; guards handover_stopped_
    std::string handover_stopped_; // why hand-over stopped, or ""
    void note_kernel_miss();
    // Page-cache drops (set_dropper): files read while a job is registered,
    // with when, appended by FUSE threads and taken by the scheduler thread, which keeps them in
    // read order until they are old enough.
    Dropper drop_;
    Dropper inval_;
    // Makes room: drops the tier's copy, or the kernel's pages of a file
    // handed over. The bytes freed from the budget.
    uint64_t evict_file(index::NodeId id);
    OpenObserver observe_;
    // Taken by an open that finds no job (to call observe_) and by
    // activate() with late opens; observe_ only queues and replay() does no
    // I/O, though a replayed open may wait for its tracker's planner.
    std::mutex observe_mu_;
    std::mutex drop_mu_; // guards read_log_; leaf lock
    std::vector<std::pair<index::NodeId, std::chrono::steady_clock::time_point>> read_log_;
    std::deque<std::pair<index::NodeId, std::chrono::steady_clock::time_point>> to_drop_;
    std::atomic<uint64_t> drops_{0}, drop_errors_{0};
    std::atomic<bool> read_any_{false}; // a file was read since the mount
    std::thread scheduler_;
    std::atomic<bool> scheduler_done_{false}; // schedule_loop() returned (stop_within)

    // Guards the stage fields below. Leaf lock: nothing is called under it,
    // no tier (their counters are read before it is taken) and no log line.
    mutable std::mutex stage_mu_;
    std::condition_variable stage_cv_;
    bool stage_requested_ = false;
    bool stage_stopping_ = false;
    StageStatus stage_;
    std::chrono::steady_clock::time_point stage_started_{};
    uint64_t stage_bytes_at_start_ = 0;
    std::thread stager_;
};

} // namespace clairfs::prefetch
