// SPDX-License-Identifier: MIT
// Everything between a FUSE request and the backing store: the RAM tier,
// the fetch pool, and, while jobs are registered, their trackers and the
// scheduler thread that prefetches in predicted order and evicts by next
// use across all of them. Without a registration (or in fallback) files are
// kept on first touch and never evicted once the budget is full.
//
// A facade over parts that each own their state, lock and status keys
// (src/prefetch/): JobTable (the jobs, and whose each open is), PageCache
// (what the kernel's page cache of the mount holds), PeerHomes (the peer
// group), Stager (stage-in), Scheduler (the prefetch rounds, their thread
// and wake-ups), RangeJobs (jobs whose samples are byte ranges of files
// held by chunk: src/prefetch/chunks/).
#pragma once

#include "clairfs/cache/backing_store.hpp"
#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/cache/tier.hpp"
#include "clairfs/plan/job.hpp"
#include "clairfs/prefetch/chunk_store.hpp"
#include "clairfs/prefetch/engine_options.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"
#include "clairfs/sys/bounded_calls.hpp"
#include "clairfs/track/tracker.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace clairfs::peer {
class Peers;
struct ServeResult;
} // namespace clairfs::peer

namespace clairfs::prefetch {

class SsdWriter;
class PageCache;
class PeerHomes;
class JobTable;
struct ActiveJob;
class Stager;
struct StageTiers;
class Scheduler;
class RangeJobs;

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
    void set_pusher(Pusher push);
    // Copies bytes of a file into the kernel's page cache at an offset
    // (FUSE_NOTIFY_STORE); 0 or -errno. The samples of a ranges job due
    // next go there ahead of its reads (RangeJobs::push): an mmap
    // reader then takes no page fault for them. Set before start().
    using RangePusher =
        std::function<int(index::NodeId id, uint64_t off, const char* bytes, size_t size)>;
    void set_range_pusher(RangePusher push);
    // Drops bytes of a file from the kernel's page cache
    // (FUSE_NOTIFY_INVAL_INODE over a range); 0 or -errno. A ranges job's
    // samples are dropped once read, so that the pages pushed ahead are not
    // what the kernel evicts first (RangeJobs::drop_read). Set before start().
    using RangeDropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;
    void set_range_dropper(RangeDropper drop);
    // Drops a file's pages from the kernel's page cache
    // (FUSE_NOTIFY_INVAL_INODE); 0 or -errno. Set before start() when the
    // kernel handles opens itself (--kernel-opens): the first READ of a
    // file then stands for its open, and a file whose pages outlived its
    // last use would be read again without a READ, unseen by the tracker.
    // While a job is registered, every file read is dropped soon after
    // (src/prefetch/scheduler.cpp says when).
    using Dropper = std::function<int(index::NodeId id)>;
    void set_dropper(Dropper drop);
    // The same notification, for evicting a file the RAM tier handed over
    // to the kernel (--handover): its pages are the tier's copy, and room
    // is made by dropping them. Set before start().
    void set_invalidator(Dropper inval);
    // Weighs the room the page cache has, for --one-copy auto
    // (config::page_cache_room() unless set: a unit test sets its own).
    // Set before start().
    using RoomProbe = std::function<uint64_t()>;
    void set_room_probe(RoomProbe probe);
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
    // their loaders are (prefetch/chunks/range_follow.hpp). One atomic load while
    // no such job is registered.
    void read_range(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid);
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
    // A registered job's loaders, trackers and plans (src/prefetch/active_job.hpp).
    using Active = ActiveJob;
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
    void set_prepare_hook(std::function<void()> hook);
    // Starts a stage-in pass (or a new one, in the current predicted order,
    // if one is running): every file the tiers take is copied into the SSD
    // tier (RAM without one) in the background, behind every prefetch.
    void stage();
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
    // What `clairfs status --cluster` shows of this node, from its status.
    std::string summary_for_peers() const;
    void ssd_status(nlohmann::json& out) const;
    // Every file the tiers take, in the order the jobs open them next (Stager::Order).
    std::vector<index::NodeId> stage_order();
    StageTiers stage_tiers() const;
    std::shared_ptr<const Jobs> jobs() const;

    const index::Index& index_;
    EngineOptions opt_;
    cache::BackingStore backing_;
    sys::BoundedCalls backing_calls_;
    cache::RamTier ram_;
    std::unique_ptr<cache::Tier> ssd_;  // the local-SSD tier, or null
    std::unique_ptr<ChunkStore> chunks_; // files above max_file, or null
    std::unique_ptr<SsdWriter> writer_; // after ssd_: drains into it when destroyed
    // The jobs registered, and which job each process's opens are
    // (src/prefetch/job_table.hpp). Before the peers, which read it.
    std::unique_ptr<JobTable> table_;
    // The peer group and each file's home there (src/prefetch/peer_homes.hpp).
    // Before the pool: its threads fetch from peers.
    std::unique_ptr<PeerHomes> group_;
    std::unique_ptr<FetchPool> pool_;   // after the tiers: its threads admit into them

    // Per node: its size if the tiers take it, else not_tiered. One dense
    // load per window position instead of a walk into the index's nodes.
    static constexpr uint32_t not_tiered = UINT32_MAX;
    std::vector<uint32_t> tier_size_;
    // The kernel's page cache of the mount: pushes, watched opens, one
    // copy, hand-over and drops (src/prefetch/page_cache.hpp).
    std::unique_ptr<PageCache> page_;
    // The prefetch rounds, their thread and wake-ups (src/prefetch/scheduler.hpp).
    // After the parts it drives; the engine stops it before any of them.
    std::unique_ptr<Scheduler> sched_;
    // Jobs whose samples are byte ranges (src/prefetch/chunks/range_jobs.hpp).
    std::unique_ptr<RangeJobs> ranges_;
    OpenObserver observe_;
    // Taken by an open that finds no job (to call observe_) and by
    // activate() with late opens; observe_ only queues and replay() does no
    // I/O, though a replayed open may wait for its tracker's planner.
    std::mutex observe_mu_;

    std::unique_ptr<Stager> stager_; // after the tiers and the pool: its thread fills them
};

} // namespace clairfs::prefetch
