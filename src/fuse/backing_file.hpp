// SPDX-License-Identifier: MIT
// What fuse_file_info::fh points at for a dataset file: the bytes of the
// whole file once a tier or a fetch supplied them (held for the life of the
// open, so eviction cannot pull them from under its reads), or, for a file
// too large for the tiers, the backing descriptor, opened by the first READ
// that needs it so an open served from the kernel cache costs the shared
// file system nothing.
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/fuse/filesystem.hpp"

#include <atomic>
#include <mutex>

namespace clairfs::fuse {

struct OpenFile {
    // Opened by the first READ of a file the tiers do not take
    // (read_through.cpp); concurrent readahead READs race to set it, and
    // the loser closes its own, so no lock is held across the open.
    std::atomic<int> fd{-1};
    std::mutex mu; // guards blob only
    cache::BlobRef blob;
    // Bytes the READs of this open were answered with from the tiers: the
    // whole file means the kernel's page cache now holds it (hand-over).
    std::atomic<uint64_t> served{0};
    // What the OPEN did about the page cache, for the RELEASE to learn from.
    prefetch::OpenPush push = prefetch::OpenPush::none;
    // The kernel reads this open's file itself (Passthrough): no READ comes.
    int32_t backing_id = 0;
    // A tiered file's open the daemon serves while the kernel reads SSD
    // entries itself: counted by Passthrough::open_tier until released.
    bool tier_cached = false;
};

// The whole file for a READ of a tiered file: the one the open pinned, else
// from the engine (a RAM hit or a fetch), kept in `of` if there is one.
// 0 or -errno.
int file_bytes(Filesystem& fs, OpenFile* of, index::NodeId id, cache::BlobRef& out);

} // namespace clairfs::fuse
