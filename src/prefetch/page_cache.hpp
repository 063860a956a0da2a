// SPDX-License-Identifier: MIT
// What the engine does with the kernel's page cache of the mount: pushes
// (FUSE_NOTIFY_STORE) at an open and ahead of one, watched opens that learn
// whether the kernel kept what it had (KeptRate), one copy (OneCopy),
// hand-over of the RAM tier's copy to the kernel (Handover), the drops that
// keep a followed job's reads visible (ReadDrops), and the page cache's
// room that one copy and drop-behind are weighed against (PageRoom). Its
// locks are all leaves; of the engine it calls only the RAM tier, and the
// chunks' store to set their drop-behind.
#pragma once

#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/engine_options.hpp"
#include "handover.hpp"
#include "kept_rate.hpp"
#include "one_copy.hpp"
#include "page_room.hpp"
#include "push_slots.hpp"
#include "read_drops.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace clairfs::prefetch {

class PageCache {
public:
    // Set before the engine starts. The pusher copies a file's bytes into
    // the kernel's pages of its inode (FUSE_NOTIFY_STORE). The dropper
    // drops them (FUSE_NOTIFY_INVAL_INODE) under --kernel-opens: the first
    // READ of a file then stands for its open, and a file whose pages
    // outlived its last use would be read again without a READ, unseen by
    // the tracker; while a job is registered every file read is dropped
    // soon after (ReadDrops). The invalidator is the same notification for
    // evicting a file handed over to the kernel (--handover): its pages are
    // the tier's copy. The room probe weighs the page cache's room for
    // --one-copy auto. Each returns 0 or -errno.
    using Pusher = std::function<int(index::NodeId id, const cache::Blob& bytes)>;
    using Dropper = std::function<int(index::NodeId id)>;
    using RoomProbe = std::function<uint64_t()>;

    PageCache(const index::Index& idx, cache::RamTier& ram, const EngineOptions& opt);
    void set_pusher(Pusher push) { push_ = std::move(push); }
    void set_dropper(Dropper drop) { reads_.set_dropper(std::move(drop)); }
    void set_invalidator(Dropper inval) { inval_ = std::move(inval); }
    void set_room_probe(RoomProbe probe) { room_.set_probe(std::move(probe)); }
    // The files held by chunk, whose drop-behind weigh_room() decides; null if none.
    void set_chunks(ChunkStore* chunks) { room_.set_chunks(chunks); }
    void set_kernel_files(KernelFiles* kernel) { room_.set_kernel_files(kernel); }
    // With peers, the tier serves them its copies: nothing is handed over.
    void stop_handover() { handover_.turn_off(); }
    PushSlots& slots() { return slots_; }

    // --- FUSE threads (and the fanotify watcher) ------------------------
    // Every open, `registered` if some job is.
    void opened(index::NodeId id, bool registered) { reads_.opened(id, registered); }
    // An open of a file the tiers take: the open clock that tells whether a
    // file was pushed since its last open.
    void tiered_open(index::NodeId id, uint64_t size);
    // At an OPEN, with the bytes Engine::opened() pinned (null if the RAM
    // tier lacks them): pushes them into the kernel's page cache before the
    // reply, so the job's reads find every page there and make no READ,
    // and no GETATTR either (each READ invalidates the inode's atime, which
    // the next fstat then asks the daemon for). Not while the kernel is
    // seen to keep the files it had (3 in 4 of the watched opens lately
    // needed no READ): a push would copy over pages it holds. 1 open in 16
    // is watched rather than pushed, to keep seeing that. With --one-copy
    // the kernel cannot have kept a file the tier holds (its last release
    // dropped the pages), so every such open is pushed.
    OpenPush push_on_open(index::NodeId id, const cache::BlobRef& bytes);
    // An open of a tiered file was released after its READs returned
    // `served` bytes of it: if that is the whole file, the kernel's page
    // cache holds it, and the RAM tier may hand it over. `how` is what
    // push_on_open() did at that open: a watched open that needed no READ
    // shows the kernel kept the file since it last had it. Called for every
    // OPEN that push_on_open() saw, also one whose reply failed: with
    // --one-copy it is the last release of a file the RAM tier holds that
    // drops the kernel's pages of it. After the reply: the drop waits on
    // the file's page locks.
    void released(index::NodeId id, uint64_t served, OpenPush how);
    // --opens fanotify (fuse/open_watch.hpp): an open the kernel made by
    // itself, told after the fact, on the watcher's thread.
    void watched_open(index::NodeId id);
    // Its close: whether the file's pages should leave the kernel's page
    // cache now (--one-copy, the last close of a file the RAM tier holds).
    // The caller then drops them itself, without touching the attributes
    // as FUSE_NOTIFY_INVAL_INODE would, and tells close_dropped().
    bool watched_close(index::NodeId id);
    void close_dropped(bool ok) { one_copy_.count_drop(ok); }
    // --opens fanotify: a READ at offset 0, so the kernel lacked the file's
    // first page at this open (it dropped the file, or was never given it).
    void read_from_start(index::NodeId id);
    // The kernel forgot the file's inode, and its pages with it.
    void forgotten(index::NodeId id);
    // A READ asks the tier for the file: if the kernel was handed it, it
    // dropped (some of) its pages: counted, and the bytes come from the SSD
    // tier or the backing store again.
    void reading(index::NodeId id);

    // --- fetch threads --------------------------------------------------
    // A fetch landed in the RAM tier: true if it is due for a push that the
    // scheduler must now make (push_landed).
    bool landed(index::NodeId id, bool demanded);

    // --- the scheduler thread -------------------------------------------
    // Makes room: drops the tier's copy, or the kernel's pages of a file
    // handed over. The bytes freed from the budget.
    uint64_t evict(index::NodeId id);
    // The files due within the loaders' reach (--push-ahead).
    bool pushes_ahead() const { return push_ && opt_.push_ahead; }
    void push_ahead(const std::vector<index::NodeId>& next);
    // Pushes the files landed() queued.
    void push_landed();
    bool drops_reads() const { return reads_.on(); }
    void drop_reads(bool following) { reads_.drop(following); }
    void jobs_gone() { reads_.jobs_gone(); }
    // Once a second: the page cache's room, for one copy and drop-behind.
    void weigh_room() { room_.weigh(one_copy_, ram_); }

    // Opens of files the tiers take, and their sizes.
    uint64_t tiered_opens() const { return opens_.load(std::memory_order_relaxed); }
    uint64_t tiered_open_bytes() const { return open_bytes_.load(std::memory_order_relaxed); }
    // Keys "ram.kernel" and the page-cache keys of "prefetch"; both objects
    // must exist.
    void status(nlohmann::json& out) const;

private:
    void push_one(index::NodeId id, const cache::Blob& b);
    bool push_due(index::NodeId id);
    bool push_at_open(index::NodeId id, const cache::Blob& bytes);
    // Pushed since its last open: the pages are there already (or the
    // kernel chose to drop them, which a READ then repairs).
    bool pushed_for_use(index::NodeId id) const {
        return pushed_at_[id] > last_open_[id].load(std::memory_order_relaxed);
    }


    const index::Index& index_;
    cache::RamTier& ram_;
    const EngineOptions opt_; // as the engine split its budget
    Pusher push_;
    Dropper inval_;
    // The open clock: per node, the open count at its last open and (the
    // scheduler's) just after its last push. A file is pushed again only
    // once opened since.
    std::atomic<uint64_t> opens_{0}, open_bytes_{0};
    std::unique_ptr<std::atomic<uint64_t>[]> last_open_;
    std::unique_ptr<uint64_t[]> pushed_at_;
    // --opens fanotify: per node, due within reach when a round found the
    // RAM tier without it; landed() queues it, and the scheduler pushes it
    // (push_landed). Not the fetch thread itself: a push waits for the
    // pages a READ in flight holds locked, and that READ may be waiting for
    // this very fetch.
    std::unique_ptr<std::atomic<bool>[]> push_on_land_;
    std::mutex landed_mu_; // leaf; guards to_push_
    std::vector<index::NodeId> to_push_;
    // Per node, whether it was opened since the mount (null without
    // --open-push or fanotify).
    std::unique_ptr<std::atomic<bool>[]> open_seen_;
    // --opens fanotify: per node, 1 while a file due was left unpushed to
    // see whether the kernel kept it, 2 once a READ at 0 showed it did not
    // (push_due); learnt from at its close.
    std::unique_ptr<std::atomic<uint8_t>[]> watch_state_;
    std::atomic<uint64_t> pushes_{0}, push_skipped_{0}, push_errors_{0};
    std::atomic<uint64_t> open_pushes_{0};
    std::atomic<uint64_t> open_busy_{0}; // pushes not made: half the FUSE threads were pushing
    PushSlots slots_;
    KeptRate kept_;
    OneCopy one_copy_;
    Handover handover_;
    ReadDrops reads_;
    PageRoom room_;
};

} // namespace clairfs::prefetch
