// SPDX-License-Identifier: MIT
// FUSE passthrough (libfuse 3.17 and kernel 6.9 on): the OPEN of a file the
// tiers do not take (larger than a sixteenth of --mem, or --mem 0) hands
// the kernel that file's backing descriptor, and the kernel then reads it
// itself, with no READ round trip to the daemon and no copy through it.
// The daemon still sees every OPEN, so following the job is unchanged.
//
// The kernel allows one backing file per inode at a time, so a node's
// backing id is shared by its concurrent opens and closed at the last
// release. Off where libfuse or the kernel lacks it, without
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
    void status(nlohmann::json& out) const;

private:
    int32_t adopt(fuse_req_t req, index::NodeId id, int32_t backing);
    struct Backing {
        int32_t id = 0;
        uint32_t opens = 0;
    };
    void stop(const std::string& why);
    std::atomic<bool> on_{false};
    std::atomic<uint64_t> opens_{0}, fallbacks_{0};
    mutable std::mutex mu_; // leaf; guards the fields below, never held across a call
    std::unordered_map<index::NodeId, Backing> open_;
    std::string why_off_ = "not started";
};

} // namespace clairfs::fuse
