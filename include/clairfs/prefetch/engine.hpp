// SPDX-License-Identifier: MIT
// Everything between a FUSE request and the backing store: the RAM tier,
// the fetch pool, and, while jobs are registered, their trackers and the
// scheduler thread that prefetches in predicted order and evicts by next
// use across all of them. Without a registration (or in fallback) files are
// kept on first touch and never evicted once the budget is full.
//
// A facade over parts that each own their state, lock and status keys
// (src/prefetch/): JobTable (the jobs, whose each open is), PageCache (the
// kernel's page cache of the mount), PeerHomes (the peer group), Stager
// (stage-in), Scheduler (the prefetch rounds, their thread and wake-ups),
// RangeJobs (jobs over byte ranges of files held by chunk: chunks/).
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

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
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
class KernelFiles;

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

    // The calls into the kernel's page cache, each 0 or -errno, set before
    // start(); src/prefetch/page_cache.hpp and chunks/range_jobs.hpp say
    // when each is made. A file's bytes into its inode's pages
    // (FUSE_NOTIFY_STORE), and bytes at an offset (a ranges job's samples).
    using Pusher = std::function<int(index::NodeId id, const cache::Blob& bytes)>;
    void set_pusher(Pusher push);
    using RangePusher =
        std::function<int(index::NodeId id, uint64_t off, const char* bytes, size_t size)>;
    void set_range_pusher(RangePusher push);
    // Pages dropped (FUSE_NOTIFY_INVAL_INODE): a range (a ranges job's
    // samples once read), a file's read under --kernel-opens (set_dropper),
    // a file's handed over (--handover: set_invalidator).
    using RangeDropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;
    void set_range_dropper(RangeDropper drop);
    using Dropper = std::function<int(index::NodeId id)>;
    void set_dropper(Dropper drop);
    void set_invalidator(Dropper inval);
    // The page cache's room, for --one-copy auto (config::page_cache_room()
    // unless set: a unit test sets its own).
    using RoomProbe = std::function<uint64_t()>;
    void set_room_probe(RoomProbe probe);
    // Told of every open while no job is registered, and of every open of
    // a file no registered job covers (job detection: control/detector.hpp;
    // the observer decides which it wants); called on the FUSE thread, so
    // it must only queue. Set before start().
    using OpenObserver = std::function<void(index::NodeId id, uint32_t pid)>;
    void set_open_observer(OpenObserver o) { observe_ = std::move(o); }
    // Like stop(), but gives up after `bound` on threads stuck in a hung
    // read: false then, and the engine must never be destroyed.
    bool stop_within(std::chrono::milliseconds bound);
    // After a stop_within() that gave up: releases what a new mount needs
    // (the SSD cache's lock) before the daemon exits around stuck threads.
    void release_for_exit();
    // Before start(): the SSD tier, between RAM and the backing store.
    void attach_ssd(std::unique_ptr<cache::Tier> ssd);
    // Before start(): the other daemons of this node's group (--peers:
    // PeerHomes). start() starts them, stop() says bye.
    void attach_peers(std::unique_ptr<peer::Peers> peers);
    // Whether the group has formed as far as it will (true without peers).
    bool peers_settled() const;
    // This node's jobs' keys, by id, that every node must agree on
    // (control::agreed_keys; a mismatch puts both in fallback), and each
    // job's local ranks, by which the group places files (PeerHomes).
    void share_registrations(std::map<std::string, std::string> keys,
                             std::map<std::string, std::vector<uint32_t>> ranks = {});

    // --- the FUSE side -------------------------------------------------
    // Where READs of this regular file come from (ReadSource).
    ReadSource source(const index::Node& n) const;
    // Whether the tiers take it whole (source() is tiers).
    bool tiered(const index::Node& n) const;
    // The files too large to be held whole, by chunk; null with
    // --chunk-size 0, --mem 0, or no such file.
    ChunkStore* chunks() { return chunks_.get(); }
    bool chunked(index::NodeId id) const { return chunks_ && chunks_->covers(id); }
    // A READ of [off, off + size) of a regular file by thread `tid`, for the
    // jobs whose samples are byte ranges (RangeJobs). One atomic load while
    // there are none.
    void read_range(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid);
    // At FUSE init, before start(): whether the kernel reads files from
    // the SSD tier itself (passthrough is on; KernelFiles), and who is told
    // of each entry that leaves the tier (the kernel's backing ids).
    void serve_ssd_by_kernel(bool on, std::function<void(index::NodeId)> dropped);
    // At an OPEN of a tiered file: a descriptor of its SSD entry for the
    // kernel to read itself (a verified entry: part of the rule source()
    // begins), or -errno, when the daemon serves it as before; then
    // whether the kernel took it. For a file held by chunk, its SSD file
    // once whole (chunks/kernel_shards.hpp).
    int kernel_file(index::NodeId id);
    // Whether files of `source` (tiers or chunks) may be passed through
    // from the SSD tier at all.
    bool ssd_by_kernel(ReadSource source) const;
    void kernel_file_served(index::NodeId id, bool handed);
    // Before start(): the SSD tier of the chunks.
    void attach_chunk_ssd(std::unique_ptr<cache::Tier> ssd);
    // An open() of a regular file by process `pid`: tells the jobs; returns
    // the file's bytes if a tier holds them, pinned for the open's lifetime.
    cache::BlobRef opened(index::NodeId id, uint32_t pid);
    // The whole file for a READ: a RAM hit, else a demand fetch (joining a
    // prefetch in flight). 0 or -errno.
    int bytes_of(index::NodeId id, cache::BlobRef& out);
    // The kernel's page cache around an open (PageCache says each one's
    // rule): at an OPEN, the bytes opened() pinned pushed before the reply;
    // its release after READs that served `served` bytes (`how`: what
    // push_on_open did), for every OPEN push_on_open saw; under --opens
    // fanotify, an open the kernel made (told after the fact, nothing
    // pinned), its close (true: drop its pages now, then close_dropped()),
    // and a READ at offset 0 (the kernel lacked the first page); the
    // kernel forgetting an inode.
    OpenPush push_on_open(index::NodeId id, const cache::BlobRef& bytes);
    void released(index::NodeId id, uint64_t served, OpenPush how = OpenPush::none);
    void watched_open(index::NodeId id, uint32_t pid);
    bool watched_close(index::NodeId id);
    void close_dropped(bool ok);
    void read_from_start(index::NodeId id);
    void forgotten(index::NodeId id);
    cache::BackingStore& backing() { return backing_; }
    // Backing-store calls a FUSE thread makes itself, each bounded by
    // --io-timeout; note_io_timeout() logs and counts one that timed out.
    sys::BoundedCalls& backing_calls() { return backing_calls_; }
    std::chrono::milliseconds io_timeout() const { return opt_.io_timeout; }
    void note_io_timeout(const index::Node& n);

    // --- the control side ----------------------------------------------
    // A registered job's loaders, trackers and plans (src/prefetch/active_job.hpp).
    using Active = ActiveJob;
    using Jobs = std::vector<std::shared_ptr<Active>>;
    // Builds job `id` of validated loaders for activate(): planners and
    // trackers with each rank's first two epochs (a second or more for
    // millions of samples). Call it holding no lock an open needs.
    std::shared_ptr<Active> prepare(std::string id,
                                    std::vector<std::shared_ptr<const plan::Job>> loaders) const;
    // Tells a prepared job's trackers of opens made before it was
    // registered (a detected job's, as detection saw them).
    void replay(const std::shared_ptr<Active>& prepared,
                std::span<const std::pair<index::NodeId, uint32_t>> opens);
    // Starts predicting for a prepared job, replacing one of its id. Returns
    // what was replaced: drop it after your own locks (the last reference
    // joins its planner threads). `late` (a detected job): the opens the
    // observer queued since the caller looked, replayed with the job made
    // visible under observe_mu_, so that no open reaches neither.
    using Opens = std::vector<std::pair<index::NodeId, uint32_t>>;
    [[nodiscard]] Jobs activate(std::shared_ptr<Active> prepared,
                                const std::function<Opens()>& late = {});
    // Removes job `id` (every job if empty; none left: first-touch caching).
    // Returns the jobs dropped, as activate() does.
    [[nodiscard]] Jobs deactivate(const std::string& id = {});
    // The jobs registered, active or retired; how many are active (some
    // process that opened their files is alive); whether `id` is.
    std::vector<std::string> job_ids() const;
    size_t active_jobs() const;
    bool is_active(const std::string& id) const;
    // The processes of job `id` still running (JobTable::live_processes).
    std::vector<uint32_t> live_processes(const std::string& id) const;
    // Job `id`'s loader process is thread `tid`'s ("from_loader"): its and
    // its workers' opens and READs are the job's from the first
    // (JobTable::bind_loader). False if no active job has that id.
    bool bind_loader(const std::string& id, uint32_t tid);
    // Tests: runs at the start of every prepare(), on the registering thread.
    void set_prepare_hook(std::function<void()> hook);
    // Starts a stage-in pass (or a new one, in the predicted order): every
    // file the tiers take into the SSD tier (RAM without one), behind prefetches.
    void stage();
    track::Mode mode() const;
    // Fills status keys: mode, reason, epoch, match_rate, backing, ram,
    // stall_seconds, prefetch, ranks (see clairfs-control(5)).
    void status(nlohmann::json& out) const;

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
    void backing_status(nlohmann::json& out) const;
    void ram_status(nlohmann::json& out) const;
    void ssd_status(nlohmann::json& out) const;
    // Every file the tiers take, in the order the jobs open them next (Stager::Order).
    std::vector<index::NodeId> stage_order();
    StageTiers stage_tiers() const;
    std::shared_ptr<const Jobs> jobs() const;
    // A registered job's open, told to the job it is (or to detection).
    void follow_open(const std::shared_ptr<const Jobs>& jobs, index::NodeId id, uint32_t pid);

    const index::Index& index_;
    EngineOptions opt_;
    cache::BackingStore backing_;
    sys::BoundedCalls backing_calls_;
    cache::RamTier ram_;
    std::unique_ptr<cache::Tier> ssd_;  // the local-SSD tier, or null
    std::unique_ptr<ChunkStore> chunks_; // files above max_file, or null
    std::unique_ptr<SsdWriter> writer_; // after ssd_: drains into it when destroyed
    // The parts (src/prefetch/), in the order they are built: each after
    // those it reads, the pool after the tiers it admits into.
    std::unique_ptr<JobTable> table_;
    std::unique_ptr<PeerHomes> group_;
    std::unique_ptr<FetchPool> pool_;
    // Per node: its size if the tiers take it, else not_tiered (one dense
    // load per window position rather than a walk into the index).
    std::vector<uint32_t> tier_size_;
    std::unique_ptr<PageCache> page_;
    std::unique_ptr<Scheduler> sched_; // stopped before any part it drives
    std::unique_ptr<RangeJobs> ranges_;
    std::unique_ptr<KernelFiles> kernel_; // SSD entries the kernel reads itself
    OpenObserver observe_;
    // Taken by an open that finds no job (to call observe_) and by
    // activate() with late opens; observe_ only queues and replay() does no
    // I/O, though a replayed open may wait for its tracker's planner.
    std::mutex observe_mu_;

    std::unique_ptr<Stager> stager_; // after the tiers and the pool: its thread fills them
};

} // namespace clairfs::prefetch
