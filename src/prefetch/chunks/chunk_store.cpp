// SPDX-License-Identifier: MIT
#include "clairfs/prefetch/chunk_store.hpp"

#include "clairfs/log.hpp"
#include "drop_behind.hpp"
#include "kernel_shards.hpp"
#include "prefetch/ssd_status.hpp"
#include "prefetch/ssd_writer.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace clairfs::prefetch {
namespace {

// SSD writes queued at once: the window read ahead, twice over.
uint64_t writer_bound(const ChunkOptions& opt) {
    return std::max<uint64_t>(opt.window * 2, 32 << 20);
}

} // namespace

ChunkStore::ChunkStore(ChunkMap map, cache::BackingStore& backing, const index::Index& idx,
                       ChunkOptions opt)
    : map_(std::move(map)), backing_(backing), index_(idx), opt_(opt),
      ram_(opt.ram, std::max<size_t>(map_.chunks(), 1)),
      next_off_(std::make_unique<std::atomic<uint64_t>[]>(std::max<size_t>(map_.files(), 1))),
      ahead_(std::make_unique<std::atomic<uint8_t>[]>(std::max<size_t>(map_.chunks(), 1))) {
    // Whole chunks, at least two (the one being read and the next), and no
    // more than a quarter of the budget: the rest keeps chunks read.
    uint64_t cs = map_.chunk_size();
    uint64_t want = (opt_.window + cs - 1) / cs;
    uint64_t most = std::max<uint64_t>(opt_.ram / 4 / cs, 2);
    window_chunks_ = static_cast<uint32_t>(std::clamp<uint64_t>(want, 2, most));
    for (size_t i = 0; i < std::max<size_t>(map_.files(), 1); ++i) next_off_[i] = UINT64_MAX;
}

ChunkStore::~ChunkStore() {
    stop({});
}

void ChunkStore::attach_ssd(std::unique_ptr<cache::Tier> ssd) {
    ssd_ = std::move(ssd);
    if (ssd_) writer_ = std::make_unique<SsdWriter>(*ssd_, writer_bound(opt_));
    if (auto* tier = dynamic_cast<cache::SsdTier*>(ssd_.get())) {
        kernel_ = std::make_unique<KernelShards>(map_, index_);
        kernel_->attach(tier);
    }
}

void ChunkStore::set_dropper(Dropper drop) {
    behind_ = drop ? std::make_unique<DropBehind>(std::move(drop)) : nullptr;
}

void ChunkStore::start() {
    if (writer_) writer_->start();
    if (behind_) behind_->start();
    pool_ = std::make_unique<FetchPool>(
        [this](index::NodeId id, bool) { return fetch(id); }, std::max(opt_.threads, 1u),
        // Enough for two readers' windows; a full queue only delays read-ahead.
        size_t{window_chunks_} * 4,
        [this](index::NodeId id, const FetchResult& r, bool) { admit(id, r); }, opt_.io_timeout);
}

bool ChunkStore::stop(std::chrono::milliseconds bound) {
    // First: FUSE threads queue drops until the session ends.
    if (behind_ && !behind_->stop(bound)) return false;
    if (pool_ && !pool_->stop(bound)) return false;
    pool_.reset();
    if (writer_ && !writer_->stop(bound)) return false;
    writer_.reset();
    return true;
}

// On a fetch thread: a chunk on its way to the SSD, the SSD tier's copy,
// else the backing store. A copy the SSD fails to return (an I/O error, a
// checksum mismatch) is dropped by the tier and read again.
FetchResult ChunkStore::fetch(ChunkId id) {
    if (writer_) {
        if (cache::BlobRef b = writer_->peek(id)) return {0, std::move(b), Source::ssd};
    }
    if (ssd_ && ssd_->contains(id)) {
        if (cache::BlobRef b = ssd_->get(id)) return {0, std::move(b), Source::ssd};
    }
    return read_backing(id);
}

FetchResult ChunkStore::read_backing(ChunkId id) {
    ChunkRange r = map_.range(id);
    FetchResult out;
    out.error = backing_.read_range(r.node, r.offset, r.length, out.blob);
    if (out.error) errors_.fetch_add(1, std::memory_order_relaxed);
    return out;
}

// On the fetching thread, before any waiter returns: RAM makes room by
// dropping its least recently used chunks (never the one coming in).
void ChunkStore::admit(ChunkId id, const FetchResult& r) {
    uint8_t expected = staging;
    if (r.error != 0) {
        // Whatever fetched it, the mark goes: a chunk left marked would
        // never be read ahead or staged again.
        if (!ahead_[id].compare_exchange_strong(expected, 0, std::memory_order_relaxed))
            unread_gone(id, true);
        return;
    }
    if (ahead_[id].compare_exchange_strong(expected, 0, std::memory_order_relaxed)) {
        if (writer_ && r.from == Source::backing && !ssd_->contains(id))
            writer_->enqueue(id, r.blob);
        return;
    }
    uint64_t size = r.blob->size;
    // One admission at a time: room made here is this chunk's. Two fetch
    // threads that both saw room for one chunk put both, and the second
    // put was refused: a chunk read ahead, fetched, and dropped unread
    // (read twice from the backing store; test_chunk_store.cpp caught it
    // under load). Memory work only under it: no I/O, no log line.
    std::unique_lock admitting(admit_mu_);
    for (;;) {
        cache::TierStats t = ram_.stats();
        if (t.bytes + size <= t.capacity || ram_.contains(id)) break;
        ChunkId victim = no_chunk;
        {
            // The least recently used chunk not read ahead and still unread:
            // a slow reader's next chunks are the last to go (they take at
            // most half the share, so the walk is short).
            std::lock_guard lk(lru_mu_);
            if (lru_.empty()) break;
            auto it = std::find_if(lru_.begin(), lru_.end(), [this](ChunkId c) {
                return ahead_[c].load(std::memory_order_relaxed) != ahead;
            });
            if (it == lru_.end()) it = lru_.begin();
            victim = *it;
            lru_.erase(it);
            lru_at_.erase(victim);
        }
        if (ram_.evict(victim) > 0) evictions_.fetch_add(1, std::memory_order_relaxed);
        unread_gone(victim, true);
    }
    if (ram_.put(id, r.blob))
        touch(id);
    else
        unread_gone(id, true);
    admitting.unlock();
    if (writer_ && r.from == Source::backing && !ssd_->contains(id)) writer_->enqueue(id, r.blob);
}

void ChunkStore::unread_gone(ChunkId id, bool wasted) {
    uint8_t expected = ahead;
    if (!ahead_[id].compare_exchange_strong(expected, 0, std::memory_order_relaxed)) return;
    ahead_bytes_.fetch_sub(map_.range(id).length, std::memory_order_relaxed);
    if (wasted) wasted_.fetch_add(1, std::memory_order_relaxed);
}

void ChunkStore::touch(ChunkId id) {
    std::lock_guard lk(lru_mu_);
    if (auto it = lru_at_.find(id); it != lru_at_.end()) {
        lru_.splice(lru_.end(), lru_, it->second);
        return;
    }
    lru_at_.emplace(id, lru_.insert(lru_.end(), id));
}

cache::BlobRef ChunkStore::chunk(ChunkId id, int& error) {
    if (cache::BlobRef b = ram_.get(id)) {
        hits_.fetch_add(1, std::memory_order_relaxed);
        touch(id);
        unread_gone(id, false);
        return b;
    }
    FetchResult r = pool_->demand(id, [this, id] { return ram_.peek(id); });
    if (r.error != 0) {
        error = r.error;
        return nullptr;
    }
    fetched_.fetch_add(1, std::memory_order_relaxed);
    unread_gone(id, false);
    return std::move(r.blob);
}

int ChunkStore::read_pieces(index::NodeId node, uint64_t off, size_t size, ChunkPieces& out) {
    out.held.clear();
    out.parts.clear();
    if (!pool_) return -EIO;
    reads_.fetch_add(1, std::memory_order_relaxed);
    const ChunkId first = map_.chunk_at(node, off), last = map_.chunk_at(node, off + size - 1);
    auto get = [&](ChunkId id, int& error) {
        cache::BlobRef b = chunk(id, error);
        // Once the first chunk came, the others are fetched at once. Not
        // before: the fetch threads are few, and a file whose reads hang
        // would take one per chunk of every READ in flight and starve the
        // other files (test_chunk_faults' hang case).
        if (b && id == first) fetch_at_once(first + 1, last);
        return b;
    };
    auto part = [&](cache::BlobRef b, uint64_t at, size_t n) {
        out.parts.push_back({b->bytes.get() + at, n});
        out.held.push_back(std::move(b));
    };
    if (int rc = walk(node, off, size, get, part); rc < 0) return rc;
    read_done(first, last, off, size);
    return 0;
}

template <class Get, class Part>
int ChunkStore::walk(index::NodeId node, uint64_t off, size_t size, Get&& get, Part&& part) {
    const uint64_t cs = map_.chunk_size();
    size_t done = 0;
    while (done < size) {
        uint64_t at = off + done;
        int error = 0;
        cache::BlobRef b = get(map_.chunk_at(node, at), error);
        if (!b) return error < 0 ? error : -EIO; // no chunk is never a short success
        uint64_t in_chunk = at % cs;
        // A tier hands back what it was given, the chunk's length; a shorter
        // blob would be a bug, answered as one rather than served.
        if (b->size <= in_chunk) return -EIO;
        size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, b->size - in_chunk));
        part(std::move(b), in_chunk, n);
        done += n;
    }
    return 0;
}

template <class Get>
ssize_t ChunkStore::gather(index::NodeId node, uint64_t off, size_t size, char* out, Get&& get) {
    auto copy_part = [&out](cache::BlobRef b, uint64_t at, size_t n) {
        std::memcpy(out, b->bytes.get() + at, n);
        out += n;
    };
    if (int rc = walk(node, off, size, get, copy_part); rc < 0) return rc;
    return static_cast<ssize_t>(size);
}

void ChunkStore::fetch_at_once(ChunkId from, ChunkId to) {
    for (ChunkId c = from; c <= to; ++c)
        if (!ram_.contains(c)) pool_->prefetch(c, [this, c] { return ram_.contains(c); });
}

ssize_t ChunkStore::copy(index::NodeId node, uint64_t off, size_t size, char* out) {
    if (!pool_) return -EIO;
    const ChunkId first = map_.chunk_at(node, off), last = map_.chunk_at(node, off + size - 1);
    // A range spanning several chunks (a chunk size below --max-read, a
    // sample pushed whole) has them all fetched at once.
    fetch_at_once(first + 1, last);
    return gather(node, off, size, out, [this](ChunkId id, int& error) { return chunk(id, error); });
}

// A READ that starts where the file's last one ended, or near it (the
// kernel's readahead sends READs of one stream on several FUSE threads,
// not always in order), continues a sequential reader; so does a first
// READ at 0.
void ChunkStore::read_done(ChunkId first, ChunkId last, uint64_t off, size_t size) {
    const uint64_t cs = map_.chunk_size();
    std::atomic<uint64_t>& end = next_off_[map_.file_index(first)];
    uint64_t prev = end.exchange(off + size, std::memory_order_relaxed);
    // Out of order by up to two readahead windows: the kernel sends a
    // stream's READs of --max-read on several threads.
    const uint64_t near = std::max<uint64_t>(cs, 2 * opt_.readahead);
    bool sequential = prev == UINT64_MAX ? off == 0 : off + near >= prev && off <= prev + near;
    if (kernel_) {
        const index::NodeId node = map_.range(first).node;
        kernel_->saw_read(map_.file_index(first),
                          sequential &&
                              (size >= stream_read || off + size >= index_.node(node).size));
    }
    if (!sequential) return;
    read_ahead(last);
    // A stream (READs of the kernel's read-ahead size, not an mmap
    // reader's page faults) that enters a chunk has passed the chunks some
    // way behind: without room in the page cache those pages would be
    // reclaimed anyway, by the reader's own allocations (bench/RESULTS.md,
    // 20261127-1204-tfrecord-drop-behind). A chunk goes once the READs
    // reach drop_back() chunks past it; every such chunk since the stream's
    // last READ, since a READ of a 1 MiB readahead spans several.
    if (size >= stream_read && behind_ && drop_on_.load(std::memory_order_relaxed) &&
        prev != UINT64_MAX && prev > 0) {
        const uint64_t reached = (off + size - 1) / cs, before = (prev - 1) / cs;
        const uint64_t back = drop_back();
        if (reached >= back && before < reached) {
            const index::NodeId node = map_.range(first).node;
            for (uint64_t k = before + 1 >= back ? before + 1 - back : 0; k <= reached - back; ++k)
                behind_->queue(node, k * cs, cs);
        }
    }
}

// In chunks: at least two, and drop_slack. The kernel's READs run ahead
// of the reader by up to two readahead windows (the one it waits for and
// the one read asynchronously beside it), on several FUSE threads, not
// always in order: a page dropped nearer than that may not have been read
// yet, and its read would come back as a READ.
uint64_t ChunkStore::drop_back() const {
    const uint64_t cs = map_.chunk_size();
    const uint64_t slack = std::max<uint64_t>(drop_slack, 2 * opt_.readahead + cs);
    return std::max<uint64_t>(2, (slack + cs - 1) / cs);
}

void ChunkStore::read_ahead(ChunkId from) {
    ChunkId id = map_.next_in_file(from);
    for (uint32_t i = 0; i < window_chunks_ && id != no_chunk; ++i, id = map_.next_in_file(id)) {
        Ahead a = fetch_ahead(id);
        if (a == Ahead::full) return;
        if (a == Ahead::queued) read_ahead_.fetch_add(1, std::memory_order_relaxed);
    }
}

void ChunkStore::prefetch(ChunkId id) {
    if (!pool_ || ram_.contains(id)) return;
    if (pool_->prefetch(id, [this, id] { return ram_.contains(id); }))
        predicted_.fetch_add(1, std::memory_order_relaxed);
}

void ChunkStore::prefetch_unread(ChunkId id) {
    if (pool_ && fetch_ahead(id) == Ahead::queued)
        predicted_.fetch_add(1, std::memory_order_relaxed);
}

ChunkStore::Ahead ChunkStore::fetch_ahead(ChunkId id) {
    if (ram_.contains(id) || ahead_[id].load(std::memory_order_relaxed)) return Ahead::held;
    uint32_t len = map_.range(id).length;
    if (ahead_bytes_.load(std::memory_order_relaxed) + len > opt_.ram / 2) return Ahead::full;
    // Marked before it is queued: its fetch may land at once.
    uint8_t none = 0;
    if (!ahead_[id].compare_exchange_strong(none, ahead, std::memory_order_relaxed))
        return Ahead::held;
    ahead_bytes_.fetch_add(len, std::memory_order_relaxed);
    if (pool_->prefetch(id, [this, id] { return ram_.contains(id); })) return Ahead::queued;
    unread_gone(id, false); // queued or fetched already, or the queue is full
    return Ahead::held;
}

bool ChunkStore::copy_held(index::NodeId node, uint64_t off, size_t size, char* out) {
    const ChunkId first = map_.chunk_at(node, off), last = map_.chunk_at(node, off + size - 1);
    for (ChunkId c = first; c <= last; ++c)
        if (!ram_.contains(c)) return false;
    return gather(node, off, size, out, [this](ChunkId id, int& error) {
               cache::BlobRef b = ram_.peek(id);
               if (!b) {
                   error = -EAGAIN; // evicted meanwhile
                   return b;
               }
               touch(id);
               unread_gone(id, false);
               return b;
           }) == static_cast<ssize_t>(size);
}

bool ChunkStore::staged(ChunkId id) const {
    return ssd_ && (ssd_->contains(id) || (writer_ && writer_->pending(id)));
}

bool ChunkStore::stage(ChunkId id) {
    if (!ssd_ || !pool_ || staged(id)) return true;
    uint8_t none = 0;
    // Read ahead or staged already: on its way.
    if (!ahead_[id].compare_exchange_strong(none, staging, std::memory_order_relaxed)) return true;
    if (pool_->background(id, [this, id] { return staged(id); })) return true;
    uint8_t mine = staging;
    ahead_[id].compare_exchange_strong(mine, 0, std::memory_order_relaxed);
    return pool_->busy(id) || staged(id);
}

uint64_t ChunkStore::ssd_bytes() const {
    return ssd_ ? ssd_->stats().bytes : 0;
}

uint64_t ChunkStore::ssd_room(uint64_t planned) const {
    return ssd_ ? stage_room(*ssd_, writer_.get(), planned) : 0;
}

bool ChunkStore::stage_idle() const {
    return (!pool_ || pool_->background_idle()) &&
           (!writer_ || writer_->stats().pending_bytes == 0);
}

void ChunkStore::status(nlohmann::json& out) const {
    cache::TierStats r = ram_.stats();
    out = {{"chunk_size", map_.chunk_size()},
           {"files", map_.files()},
           {"chunks", map_.chunks()},
           {"bytes", map_.bytes()},
           {"files_not_chunked", map_.skipped()},
           {"window_chunks", window_chunks_},
           {"reads", reads_.load(std::memory_order_relaxed)},
           {"ram_hits", hits_.load(std::memory_order_relaxed)},
           {"fetched_for_read", fetched_.load(std::memory_order_relaxed)},
           {"read_ahead", read_ahead_.load(std::memory_order_relaxed)},
           {"read_ahead_wasted", wasted_.load(std::memory_order_relaxed)},
           {"predicted", predicted_.load(std::memory_order_relaxed)},
           {"read_ahead_bytes", ahead_bytes_.load(std::memory_order_relaxed)},
           {"fetch_errors", errors_.load(std::memory_order_relaxed)},
           {"drop_behind", drop_behind()},
           {"dropped_behind", behind_ ? behind_->dropped() : 0},
           {"ram",
            {{"bytes", r.bytes},
             {"capacity", r.capacity},
             {"chunks", r.entries},
             {"evictions", evictions_.load(std::memory_order_relaxed)},
             {"rejected", r.rejected}}}};
    out["ssd"] = ssd_ ? ssd_tier_status(*ssd_, "chunks", writer_.get()) : nlohmann::json(nullptr);
    if (kernel_) kernel_->status(out["ssd"]);
}

} // namespace clairfs::prefetch
