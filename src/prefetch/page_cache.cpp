// SPDX-License-Identifier: MIT
#include "page_cache.hpp"


#include <cerrno>
#include <nlohmann/json.hpp>

namespace clairfs::prefetch {
namespace {

// Largest file put into the kernel's page cache: its pages would crowd out
// many small files', and its READs are few and large anyway.
constexpr uint64_t max_push = 16 << 20;

} // namespace

PageCache::PageCache(const index::Index& idx, cache::RamTier& ram, const EngineOptions& opt)
    : index_(idx), ram_(ram), opt_(opt),
      last_open_(std::make_unique<std::atomic<uint64_t>[]>(idx.size())),
      pushed_at_(std::make_unique<uint64_t[]>(idx.size())), slots_(opt.fuse_threads),
      // Hand-over lets the tier's copy go already: nothing to drop beside it.
      one_copy_(opt.mem > 0 && !opt.handover ? opt.one_copy : config::When::never, idx.size()),
      handover_(opt.handover && opt.mem > 0), reads_(idx), room_(opt.drop_behind) {
    if ((opt.open_push || opt.watch_opens) && opt.mem > 0)
        open_seen_ = std::make_unique<std::atomic<bool>[]>(idx.size()); // all false
    if (opt.watch_opens && opt.mem > 0) {
        watch_state_ = std::make_unique<std::atomic<uint8_t>[]>(idx.size()); // all 0
        push_on_land_ = std::make_unique<std::atomic<bool>[]>(idx.size());   // all false
    }
}

void PageCache::tiered_open(index::NodeId id, uint64_t size) {
    open_bytes_.fetch_add(size, std::memory_order_relaxed);
    last_open_[id].store(opens_.fetch_add(1, std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
}

// Pushes at open. A file's first open since the mount pushes what the RAM
// tier holds: the kernel cannot have it yet. Later opens push unless the
// kernel has lately been keeping the files it had: watched opens (not
// pushed) show that, one in 16 of them and every open while the kernel
// keeps them. A push the kernel did not need costs a copy into pages it
// still held; a READ it did need costs two round trips (the READ, and the
// GETATTR the epoch after: each READ invalidates the atime). So it pushes
// unless 3 in 4 watched files were kept.
OpenPush PageCache::push_on_open(index::NodeId id, const cache::BlobRef& bytes) {
    one_copy_.opening(id);
    if (!open_seen_ || !push_) return OpenPush::none;
    // Nothing to push, ever: its opens say nothing about the others.
    const uint64_t size = index_.node(id).size;
    if (size == 0 || size > max_push) return OpenPush::none;
    const bool have = static_cast<bool>(bytes);
    if (one_copy_.dropping()) {
        if (have) push_at_open(id, *bytes);
        return OpenPush::none; // nothing to learn: the kernel was made to drop it
    }
    if (!open_seen_[id].exchange(true, std::memory_order_relaxed)) {
        if (have) push_at_open(id, *bytes);
        return OpenPush::none; // its READs (if any) only fill the kernel's cache
    }
    if (have && !kept_.watch_next() && push_at_open(id, *bytes)) return OpenPush::pushed;
    kept_.note_watched();
    return OpenPush::watched;
}

bool PageCache::push_at_open(index::NodeId id, const cache::Blob& bytes) {
    if (!slots_.take()) {
        open_busy_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    int rv = push_(id, bytes);
    slots_.give();
    // EAGAIN: the FUSE layer could not push on this thread (a thread
    // answering an io_uring ring alone must not wait for a READ).
    (rv == 0 ? open_pushes_ : rv == -EAGAIN ? open_busy_ : push_errors_)
        .fetch_add(1, std::memory_order_relaxed);
    return rv == 0;
}

// Hand-over (cache/ram_tier.hpp): a file read whole through the mount is
// in the kernel's page cache, which keeps it across opens (keep_cache), so
// the RAM tier's copy would be a second one, charged to the same memory.
// Released, not at the last READ: a READ's reply has not reached the page
// cache when the daemon sends it, and a concurrent READ of the same open
// still needs the bytes (it holds its own reference anyway).
void PageCache::released(index::NodeId id, uint64_t served, OpenPush how) {
    // A READ: the kernel no longer held the file. None: it did.
    if (how == OpenPush::watched) kept_.learn(served == 0);
    if (one_copy_.on()) {
        // A file the tier lacks keeps its pages: there they are the only copy.
        if (one_copy_.last_release(id) && inval_ && ram_.contains(id) && !ram_.in_kernel(id)) {
            int rv = inval_(id);
            // ENOENT: the kernel has no inode for it, so no pages either.
            one_copy_.count_drop(rv == 0 || rv == -ENOENT);
        }
        return; // no hand-over beside it
    }
    if (!handover_.on()) return;
    const index::Node& n = index_.node(id);
    if (!tiered_size(opt_, n.size) || served < n.size) return;
    ram_.hand_over(id, n.size);
}

void PageCache::watched_open(index::NodeId id) {
    one_copy_.opening(id);
    if (open_seen_) open_seen_[id].store(true, std::memory_order_relaxed);
}

bool PageCache::watched_close(index::NodeId id) {
    if (watch_state_) {
        // Left unpushed for this use: a READ at 0 since says the kernel had
        // dropped it.
        if (uint8_t w = watch_state_[id].exchange(0, std::memory_order_relaxed)) kept_.learn(w == 1);
    }
    return one_copy_.last_close(id) && ram_.contains(id);
}

void PageCache::read_from_start(index::NodeId id) {
    if (!watch_state_) return;
    uint8_t watched = 1;
    watch_state_[id].compare_exchange_strong(watched, 2, std::memory_order_relaxed);
}

void PageCache::forgotten(index::NodeId id) {
    if (ram_.kernel_lost(id, index_.node(id).size)) handover_.note_forgotten();
}

void PageCache::reading(index::NodeId id) {
    if (ram_.kernel_lost(id, index_.node(id).size)) handover_.note_miss(ram_);
}

bool PageCache::landed(index::NodeId id, bool demanded) {
    if (!push_on_land_ || !push_on_land_[id].exchange(false, std::memory_order_relaxed) || demanded)
        return false;
    std::lock_guard lk(landed_mu_);
    to_push_.push_back(id);
    return true;
}

uint64_t PageCache::evict(index::NodeId id) {
    if (!ram_.in_kernel(id)) return ram_.evict(id);
    // The kernel's pages first, then the mark: a READ in between finds the
    // file still marked, counts a miss and fetches it, which is harmless.
    // -ENOENT: the kernel has no inode for it, so no pages either.
    if (inval_) inval_(id);
    uint64_t size = index_.node(id).size;
    if (!ram_.kernel_lost(id, size)) return 0;
    handover_.note_evicted();
    return size;
}

void PageCache::push_ahead(const std::vector<index::NodeId>& next) {
    for (index::NodeId id : next) {
        if (pushed_for_use(id)) continue;
        cache::BlobRef b = ram_.peek(id);
        // Still on its way (--opens fanotify): pushed when it lands, since
        // no open will push it either.
        if (!b && push_on_land_) {
            push_on_land_[id].store(true, std::memory_order_relaxed);
            // Landed in between: its landed() may have looked already.
            if (!(b = ram_.peek(id)) || !push_on_land_[id].exchange(false)) continue;
        }
        if (b) push_one(id, *b);
    }
}

// One file due, its bytes in the RAM tier: into the page cache, once per
// use (pushed_at_ against the open clock), and under --opens fanotify by
// push_due()'s rule.
void PageCache::push_one(index::NodeId id, const cache::Blob& b) {
    if (b.size > max_push || pushed_for_use(id)) return;
    pushed_at_[id] = opens_.load(std::memory_order_relaxed) + 1;
    if (watch_state_ && !push_due(id)) return;
    int rv = push_(id, b);
    // Stored whole: the kernel's page cache holds it now.
    if (rv == 0 && handover_.on()) ram_.hand_over(id, b.size);
    // ENOENT: the kernel has no inode for it yet (never looked up).
    (rv == 0         ? pushes_
     : rv == -ENOENT ? push_skipped_
                     : push_errors_)
        .fetch_add(1, std::memory_order_relaxed);
}

void PageCache::push_landed() {
    if (!push_on_land_ || !push_) return;
    std::vector<index::NodeId> landed;
    {
        std::lock_guard lk(landed_mu_);
        landed.swap(to_push_);
    }
    for (index::NodeId id : landed)
        if (cache::BlobRef b = ram_.peek(id)) push_one(id, *b);
}

// --opens fanotify: whether a file due goes into the page cache ahead of
// its open. There is no OPEN to push at, so the push ahead is the only
// one; but a push the kernel did not need copies over pages it held. The
// same rule as at an open (push_on_open): files the kernel cannot have
// (never opened since the mount, or dropped at their last close) are
// pushed; the others are pushed unless 3 in 4 watched files were kept,
// and one in 16 is watched (left unpushed, its close then says whether a
// READ at 0 was needed). Called once per file and use: pushed_at_ records
// the decision.
bool PageCache::push_due(index::NodeId id) {
    if (one_copy_.dropping()) return true;
    if (!open_seen_[id].load(std::memory_order_relaxed)) return true;
    if (!kept_.watch_next()) return true;
    kept_.note_watched();
    watch_state_[id].store(1, std::memory_order_relaxed);
    return false;
}

void PageCache::status(nlohmann::json& out) const {
    cache::RamTier::KernelStats k = ram_.kernel_stats();
    nlohmann::json& kernel = out["ram"]["kernel"];
    kernel["files"] = k.files;
    kernel["bytes"] = k.bytes;
    kernel["handed_over"] = k.handed_over;
    kernel["hits"] = k.hits;
    handover_.status(kernel);
    nlohmann::json& p = out["prefetch"];
    p["pushed"] = pushes_.load(std::memory_order_relaxed);
    p["push_skipped"] = push_skipped_.load(std::memory_order_relaxed);
    p["push_errors"] = push_errors_.load(std::memory_order_relaxed);
    p["open_pushes"] = open_pushes_.load(std::memory_order_relaxed);
    p["open_busy"] = open_busy_.load(std::memory_order_relaxed);
    kept_.status(p);
    reads_.status(p);
    one_copy_.status(p, room_.room());
}

} // namespace clairfs::prefetch
