// SPDX-License-Identifier: MIT
// Large files in the tiers by chunk (prefetch/chunk_map.hpp). A READ of a
// file the tiers cannot hold whole is served from its chunks: from the RAM
// tier, else fetched (from the SSD tier, else the backing store) by a
// fetch pool of its own, which joins a read of the same chunk already in
// flight. A file read on from where its last READ ended is read ahead a
// window of chunks, so a sequential reader (a TFRecord shard, a tar shard)
// finds the next chunks fetched; a reader that jumps about fetches only
// the chunks it touches.
//
// RAM keeps chunks least recently used first out: the window read ahead is
// always the newest, and a chunk read is kept as long as room allows. The
// SSD tier (one of its own in --cache-dir) keeps every chunk fetched from
// the backing store until it is full, a file's chunks in one sparse file
// of its size, and takes them back at a remount over the unchanged files;
// a file whole there may be read by the kernel itself (KernelShards).
#pragma once

#include "clairfs/cache/backing_store.hpp"
#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/cache/tier.hpp"
#include "clairfs/prefetch/chunk_map.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <unordered_map>
#include <sys/uio.h>
#include <vector>

namespace clairfs::prefetch {

class SsdWriter;
class DropBehind;
class KernelShards;

struct ChunkOptions {
    uint64_t ram = 0;      // RAM budget for chunks, bytes (> 0)
    unsigned threads = 4;  // fetch threads
    // How far a sequential reader is read ahead, in bytes (rounded up to
    // whole chunks, at least 2, and at most a quarter of `ram`).
    uint64_t window = 16 << 20;
    std::chrono::milliseconds io_timeout{60000}; // as EngineOptions::io_timeout
    uint64_t readahead = 128 << 10;              // as EngineOptions::readahead
};

// A READ's bytes where they lie: `parts` point into the chunks `held`
// keeps alive (ChunkStore::read_pieces).
struct ChunkPieces {
    std::vector<cache::BlobRef> held;
    std::vector<iovec> parts;
};

class ChunkStore {
public:
    ChunkStore(ChunkMap map, cache::BackingStore& backing, const index::Index& idx,
               ChunkOptions opt);
    ~ChunkStore();
    ChunkStore(const ChunkStore&) = delete;
    ChunkStore& operator=(const ChunkStore&) = delete;
    // Before start(): the SSD tier for chunks, keyed by chunk number.
    void attach_ssd(std::unique_ptr<cache::Tier> ssd);
    // Before start(): how pages a sequential reader has passed leave the
    // kernel's page cache (FUSE_NOTIFY_INVAL_INODE over a range), once
    // set_drop_behind(true) says the page cache lacks room for them.
    using Dropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;
    void set_dropper(Dropper drop);
    // Whether to drop them: while the chunked files would not fit in the
    // page cache's room (PageCache::weigh_chunk_room). Off at first.
    void set_drop_behind(bool on) { drop_on_.store(on, std::memory_order_relaxed); }
    bool drop_behind() const { return drop_on_.load(std::memory_order_relaxed); }
    bool can_drop_behind() const { return behind_ != nullptr; }
    void start();
    // As FetchPool::stop and SsdWriter::stop: false if a fetch or a write
    // is stuck after `bound`; the store must then never be destroyed.
    bool stop(std::chrono::milliseconds bound);

    const ChunkMap& map() const { return map_; }
    bool covers(index::NodeId node) const { return map_.covers(node); }
    // A READ of bytes [off, off + size) of a covered file, all within it,
    // without a copy: where its bytes lie, in order, as parts of the chunks
    // they are in, which `out` holds while the caller replies with them
    // (fuse_reply_iov). A readahead READ of --max-read bytes seldom starts
    // at a chunk's start, so most of them span two chunks. 0, else -errno
    // (-EIO after --io-timeout, -ESTALE for a file changed since the scan).
    // On a FUSE thread.
    int read_pieces(index::NodeId node, uint64_t off, size_t size, ChunkPieces& out);
    // The same bytes copied into `out`, fetching what RAM lacks, but not a
    // READ: not counted as one and no sign of a sequential reader
    // (RangeJobs::push_rest). size, else -errno.
    ssize_t copy(index::NodeId node, uint64_t off, size_t size, char* out);
    // Fetches chunk `id` into RAM ahead of a READ the scheduler predicts (a
    // ranges job's next samples). Not marked unread as read-ahead is: a
    // predicted sample may be served from the page cache with no READ,
    // and the scheduler bounds what it asks for by walking from the
    // readers' cursors (RangeJobs::prefetch) instead.
    void prefetch(ChunkId id);
    // Fetches chunk `id` into RAM as read-ahead does: marked unread, so
    // eviction passes over it until a READ takes it, and within
    // read-ahead's half of the RAM. For the first chunks of a file a
    // registered job opens next (prefetch_shard_heads): that file
    // is surely read from its start. Counted as predicted.
    void prefetch_unread(ChunkId id);
    uint64_t ram_capacity() const { return opt_.ram; }
    // Copies bytes [off, off + size) of a covered file into `out` if RAM
    // holds every chunk they lie in; false, copying nothing useful,
    // otherwise. Fetches nothing and counts no READ: the scheduler's way
    // to push predicted samples into the kernel's page cache. The chunks
    // copied count as read (most recently used, no longer unread ahead):
    // their bytes are on their way to the reader.
    bool copy_held(index::NodeId node, uint64_t off, size_t size, char* out);
    // Stage-in (Engine::stage_pass), with an SSD tier only: every chunk
    // into it, each fetch behind every READ's and read-ahead's, and not
    // kept in RAM (the pass would only evict the chunks readers use).
    bool has_ssd() const { return ssd_ != nullptr; }
    // Queues chunk `id` for the SSD; false if the background queue is full
    // (true if the chunk is held or on its way already).
    bool stage(ChunkId id);
    // Whether the SSD tier holds the chunk or the writer is writing it.
    bool staged(ChunkId id) const;
    uint64_t ssd_bytes() const;               // the SSD tier's bytes (0 without one)
    uint64_t ssd_room(uint64_t planned) const; // as Engine::stage_room
    bool stage_idle() const; // no stage-in fetch queued or being read, nothing to write
    // The record files the kernel reads whole from the SSD tier (null
    // without one; prefetch/chunks/kernel_shards.hpp).
    KernelShards* kernel_shards() { return kernel_.get(); }
    const KernelShards* kernel_shards() const { return kernel_.get(); }
    // Status key "chunks" (clairfs-control(5)).
    void status(nlohmann::json& out) const;

private:
    FetchResult fetch(ChunkId id);
    FetchResult read_backing(ChunkId id);
    void admit(ChunkId id, const FetchResult& r);
    cache::BlobRef chunk(ChunkId id, int& error); // RAM, else a demand fetch; null and -errno
    // Walks [off, off + size) of `node` over the chunks get(id, error)
    // hands out, in order, calling part(chunk, offset in it, length) for
    // each: 0, or the error of the first it does not hand out (-EIO if it
    // gave none).
    template <class Get, class Part>
    int walk(index::NodeId node, uint64_t off, size_t size, Get&& get, Part&& part);
    // The same, copied into `out`: size, or that error.
    template <class Get>
    ssize_t gather(index::NodeId node, uint64_t off, size_t size, char* out, Get&& get);
    // Queues the chunks from..to that RAM lacks, fetched at once rather than
    // one after another.
    void fetch_at_once(ChunkId from, ChunkId to);
    void touch(ChunkId id);           // most recently used now
    void read_done(ChunkId first, ChunkId last, uint64_t off, size_t size); // read-ahead, drop-behind
    void read_ahead(ChunkId from); // the window after `from`, as far as the budget allows
    enum class Ahead : uint8_t { held, queued, full };
    Ahead fetch_ahead(ChunkId id); // one chunk, marked unread, within the budget

    ChunkMap map_;
    cache::BackingStore& backing_;
    const index::Index& index_;
    ChunkOptions opt_;
    uint32_t window_chunks_ = 2;
    static constexpr uint8_t ahead = 1, staging = 2; // ahead_ values
    cache::RamTier ram_;
    std::unique_ptr<cache::Tier> ssd_;
    std::unique_ptr<SsdWriter> writer_; // after ssd_: drains into it when destroyed
    std::unique_ptr<FetchPool> pool_;   // after the tiers: its threads admit into them
    std::unique_ptr<DropBehind> behind_; // null without a dropper
    std::unique_ptr<KernelShards> kernel_; // with an SSD tier
    // The smallest READ that tells a stream: a page fault is one page.
    static constexpr size_t stream_read = 64 << 10;
    // How far behind a stream's READs its pages are dropped, at least;
    // more where the readahead is larger (drop_back()).
    static constexpr uint64_t drop_slack = 1 << 20;
    uint64_t drop_back() const;
    std::atomic<bool> drop_on_{false};

    // Held while a fetched chunk is admitted into RAM (admit): making room
    // and taking it are one step. lru_mu_ is taken under it.
    std::mutex admit_mu_;
    // RAM's chunks, least recently used first. Leaf lock: no tier call,
    // no I/O and no log line under it.
    mutable std::mutex lru_mu_;
    std::list<ChunkId> lru_;
    std::unordered_map<ChunkId, std::list<ChunkId>::iterator> lru_at_;

    // Per covered file (by first chunk's file index): where its last READ
    // ended, to tell a sequential reader; racy by design (advice only).
    std::unique_ptr<std::atomic<uint64_t>[]> next_off_;
    // Per chunk: 2 while fetched for stage-in; 1 while read ahead and not yet read. Their bytes (queued
    // or in RAM) stay under half the RAM share: eight shards read at once
    // with a full window each would otherwise evict one another's chunks
    // before they are read, and fetch them twice from the shared file
    // system.
    std::unique_ptr<std::atomic<uint8_t>[]> ahead_;
    std::atomic<uint64_t> ahead_bytes_{0};
    void unread_gone(ChunkId id, bool wasted); // clears ahead_[id], if set
    std::atomic<uint64_t> reads_{0}, hits_{0}, fetched_{0}, read_ahead_{0}, evictions_{0};
    std::atomic<uint64_t> predicted_{0}; // fetched by prefetch()
    std::atomic<uint64_t> wasted_{0}; // read ahead, then dropped unread
    std::atomic<uint64_t> errors_{0};
};

} // namespace clairfs::prefetch
