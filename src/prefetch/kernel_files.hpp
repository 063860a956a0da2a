// SPDX-License-Identifier: MIT
// Files the kernel reads itself from the SSD tier (FUSE passthrough): a
// file whose SSD entry was read back intact in this mount is handed to the
// kernel at its OPEN, so its bytes never pass through the daemon and live
// once, in the page cache of the entry's file, as a local copy's would.
// On where passthrough is on (the FUSE layer says so at init) and the SSD
// tier is attached. The scheduler counts such a file as held (no promotion
// into the RAM tier), and a prefetch of one not yet verified reads it
// through the page cache (warm): that read is the check, and its pages
// are the ones the kernel then serves. So an entry is handed over only
// while those pages are all still in the page cache: one gone would be
// read again from the device, unchecked (SsdTier::open_for_kernel).
// Under --ssd-check once a verified entry stays the kernel's with its
// pages gone, so a prefetch of it asks the kernel to read it into the page
// cache ahead of its open (read_ahead) instead of the daemon reading it.
#pragma once

#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/index/node.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace clairfs::prefetch {

class KernelFiles {
public:
    // Null: no SSD tier, never on. `nodes`: the index's size.
    void attach(cache::SsdTier* ssd, size_t nodes);
    void turn_on(bool on) { on_.store(on && ssd_, std::memory_order_relaxed); }
    bool on() const { return on_.load(std::memory_order_relaxed); }
    // Whether the kernel reads the file itself at its next open.
    bool reads(index::NodeId id) const { return on() && ssd_->verified(id); }
    // Whether a prefetch of it should warm (verify) its entry rather than
    // promote it into the RAM tier.
    bool warms(index::NodeId id) const { return on() && ssd_->contains(id); }
    // --ssd-check once: the files due next that the kernel reads itself
    // go into the page cache before their open (SsdTier::read_ahead), each
    // once until its next close; the daemon copies none of their bytes.
    bool reads_ahead() const { return on() && ssd_->checks_once(); }
    void read_ahead(const std::vector<index::NodeId>& next);
    // `demanded`: for an open the daemon serves (its pages then let the
    // next open be the kernel's), counted as the tier's hit or miss.
    cache::BlobRef warm(index::NodeId id, bool demanded = false);
    // At an OPEN: the entry's descriptor for the kernel, or -errno
    // (SsdTier::open_for_kernel; -ENOTSUP while off). An entry not
    // verified, or whose checked pages are gone, is checked first if
    // `check` (not where the RAM tier holds the file).
    int open(index::NodeId id, bool check = true);
    // The OPEN's outcome: handed over (the tier's hit), or refused by the
    // kernel (the daemon serves it then).
    void count(bool handed);
    // The last close of an open it served, while a clairvoyant job's
    // prefetch reads each file anew ahead of its next use and drop-behind
    // is on: the entry's pages leave the page cache, so that within a
    // memory budget they do not crowd out the files due next and the job's
    // own memory, which the job would pay for in reclaim. Where the entries
    // fit in the page cache's room it is off, and their pages stay: the
    // next epoch's opens are then the kernel's with no read at all.
    void closed(index::NodeId id, bool clairvoyant);
    // Set from --drop-behind: always, never, or weighed (PageRoom).
    void set_drop_behind(bool on) { drop_behind_.store(on, std::memory_order_relaxed); }
    bool drop_behind() const { return drop_behind_.load(std::memory_order_relaxed); }
    // The bytes the entries take (what drop-behind is weighed on).
    uint64_t bytes() const { return ssd_ ? ssd_->stats().bytes : 0; }
    // Keys "kernel" and "verified" of status's "ssd".
    void status(nlohmann::json& ssd) const;

private:
    cache::SsdTier* ssd_ = nullptr;
    size_t nodes_ = 0;
    std::atomic<bool> on_{false}, drop_behind_{false};
    // Per node: read ahead since its last close (read_ahead, closed).
    std::unique_ptr<std::atomic<bool>[]> ahead_;
    std::atomic<uint64_t> handed_{0}, refused_{0}, warmed_{0}, unverified_{0}, uncached_{0},
        dropped_{0}, read_ahead_{0}, warmed_at_open_{0};
};

} // namespace clairfs::prefetch
