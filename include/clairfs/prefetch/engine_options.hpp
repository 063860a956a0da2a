// SPDX-License-Identifier: MIT
// What a mount asks of its prefetch engine: the budgets and the page-cache
// choices. Apart from engine.hpp so that the engine's parts take it without
// the engine.
#pragma once

#include "clairfs/config/mount_choices.hpp"

#include <chrono>
#include <cstdint>

namespace clairfs::index {
class Index;
}

namespace clairfs::prefetch {

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
    // from the scheduler thread (PageCache::push_ahead).
    bool push_ahead = false;
    // --open-push: at its open, a file the RAM tier holds goes into the
    // kernel's page cache unless the kernel kept it (PageCache::push_on_open).
    bool open_push = false;
    // --one-copy: when the last open of a file the RAM tier holds is
    // released, its pages leave the kernel's page cache, so RAM holds its
    // bytes once (OneCopy, PageCache::released): never, always, or (automatic)
    // while the tier's bytes would take more than half the page cache's
    // room (PageCache::weigh_room).
    using When = config::When;
    using OneCopy = When;
    OneCopy one_copy = OneCopy::never;
    // --drop-behind: a sequential reader's pages of files held by chunk
    // leave the kernel's page cache once passed (ChunkStore::read_done):
    // never, always, or (automatic) while those files would take more
    // than half the page cache's room (PageCache::weigh_chunk_room). Needs
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
    // dataset (split_budget); `mem` is then the rest.
    uint64_t chunk_mem = 0;
    // Files neither the tiers nor the chunks take, when larger than this
    // (--max-read: one READ), are read by the kernel from the backing file
    // itself (FUSE passthrough) where it can: a passthrough open costs a
    // backing open at every OPEN (~45 us here), a smaller file one READ
    // round trip, or none while the mount's page cache keeps it
    // (bench/RESULTS.md, "Passthrough").
    uint64_t passthrough_above = UINT64_MAX;
    // The kernel's readahead on the mount (--max-read, which the daemon
    // sets it to): how far a stream's READs run ahead of its reader.
    uint64_t readahead = 128 << 10;
};

// Whether the tiers take a file of `size` bytes whole (Engine::tiered):
// larger files are held by chunk or read through.
constexpr bool tiered_size(const EngineOptions& opt, uint64_t size) {
    return opt.mem > 0 && size <= opt.max_file;
}

// Splits --mem between whole files and chunks, in proportion to the
// dataset's bytes in each (chunks get at least 8 chunks, or the large
// files' bytes if less, but not above half of --mem for that; none at all
// if that is under 4 chunks); fixes max_file. The engine applies it to the
// options it is given.
EngineOptions split_budget(const index::Index& idx, EngineOptions opt);

// Where a file's READs are served from: Engine::source decides it, for the
// OPEN and each READ alike, and the FUSE side only carries it out.
enum class ReadSource : uint8_t {
    tiers,       // whole, from the RAM and SSD tiers (Engine::bytes_of)
    chunks,      // by chunk (ChunkStore), held and read ahead
    backing,     // read through to the backing store, range by range
    passthrough, // by the kernel from the backing file; as backing where it cannot
};

// The per-node size table the engine's parts share (Engine::tier_size_):
// a file's size if the tiers take it, else not_tiered.
inline constexpr uint32_t not_tiered = UINT32_MAX;

// What an OPEN did about the kernel's page cache (PageCache::push_on_open),
// for its RELEASE to learn from.
enum class OpenPush : uint8_t {
    none,    // --no-open-push, or nothing to learn (a file's first open)
    pushed,  // the bytes were pushed
    watched, // not pushed: the open's READs show whether the kernel kept it
    kernel,  // passed through from its SSD entry (KernelFiles): nothing pushed
};

} // namespace clairfs::prefetch
