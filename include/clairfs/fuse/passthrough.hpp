// SPDX-License-Identifier: MIT
// FUSE passthrough (libfuse 3.17 and kernel 6.9 on): the OPEN of a file the
// tiers do not take (larger than a sixteenth of --mem, or --mem 0) hands
// the kernel that file's backing descriptor, and the kernel then reads it
// itself, with no READ round trip to the daemon and no copy through it.
// The daemon still sees every OPEN, so following the job is unchanged.
//
// The files the SSD tier holds and has verified are passed through too,
// from their entry's file (prefetch/kernel_files.hpp), and files held by
// chunk from their SSD file once whole (prefetch/chunks/kernel_shards.hpp). Their backing id is
// kept while the entry is in the tier (up to max_kept of them), not opened
// at every OPEN, and closed once the entry has left and its last open is
// released.
//
// The kernel allows one backing file per inode at a time, and refuses an
// open that would mix a passthrough open with a cached one (the opener
// sees EIO), so a node's backing id is shared by its concurrent opens, and
// a file with cached opens of tiered bytes is not passed through until
// they are released. Off where libfuse or the kernel lacks it, without
// CAP_SYS_ADMIN (the kernel refuses the backing file), or at the first
// refusal of any other kind: the reason is logged once and shown in
// status, and such files are read through READs as before.
#pragma once

#include "clairfs/index/node.hpp"

#include <atomic>
#include <cstdint>
#include <fuse_lowlevel.h>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace clairfs::fuse {

struct Filesystem;

class Passthrough {
public:
    // From FUSE init: whether the kernel took the capability ("" if it
    // did, else why not).
    void start(std::string why_not);
    bool on() const { return on_.load(std::memory_order_relaxed); }
    // At an OPEN of a file the tiers do not take: the backing id for the
    // reply (fuse_file_info::backing_id), or 0 to serve it through READs.
    // -errno when the backing file cannot be opened (the OPEN fails with
    // it, as its first READ would have).
    int32_t open(fuse_req_t req, Filesystem& fs, const index::Node& n, index::NodeId id);
    // At the RELEASE of an open that had one, before the reply (closing
    // the id needs the request's session). Null for an OPEN whose reply
    // failed (its request is gone): the last one then leaves the id to the
    // kernel, which frees it at unmount.
    void release(fuse_req_t req, index::NodeId id);
    // At an OPEN of a file the tiers take, while the kernel reads SSD
    // entries itself: its backing id (shared, kept, or made now from the
    // entry's file), or 0 to serve it as before, in which case the open
    // is counted as cached until cached_release().
    int32_t open_tier(fuse_req_t req, Filesystem& fs, index::NodeId id);
    void cached_release(index::NodeId id);
    // The SSD tier let the entry go (any thread, no request): its kept
    // id is closed at the next request once no open uses it.
    void dropped(index::NodeId id);
    void status(nlohmann::json& out) const;

    // Kept backing ids hold an open file each in the kernel: past this
    // many, a tier file's id is closed at its last release like any other.
    static constexpr size_t max_kept = size_t{1} << 16;

private:
    int32_t adopt(fuse_req_t req, index::NodeId id, int32_t backing, bool keep = false);
    int32_t share_kept(index::NodeId id, int32_t kept);
    // Closes the ids queued by dropped() and last releases that had no
    // request; `req` may be null (nothing is closed then).
    void close_queued(fuse_req_t req);
    struct Backing {
        int32_t id = 0;
        uint32_t opens = 0;  // passed through
        uint32_t cached = 0; // of tiered bytes, served by the daemon
        bool kept = false;   // held while the entry is in the SSD tier
    };
    void stop(const std::string& why);
    void refused(int err); // the kernel refused a backing file
    std::atomic<bool> on_{false};
    std::atomic<uint64_t> opens_{0}, fallbacks_{0}, tier_opens_{0}, kept_opened_{0};
    mutable std::mutex mu_; // leaf; guards the fields below, never held across a call
    std::unordered_map<index::NodeId, Backing> open_;
    size_t kept_ = 0;               // entries of open_ with kept set
    std::vector<int32_t> to_close_; // ids no open or entry uses any more
    std::string why_off_ = "not started";
};

} // namespace clairfs::fuse
