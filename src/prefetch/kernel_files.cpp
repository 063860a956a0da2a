// SPDX-License-Identifier: MIT
#include "kernel_files.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

void KernelFiles::attach(cache::SsdTier* ssd, size_t nodes) {
    ssd_ = ssd;
    nodes_ = ssd ? nodes : 0;
    ahead_ = nodes_ ? std::make_unique<std::atomic<bool>[]>(nodes_) : nullptr;
}

void KernelFiles::read_ahead(const std::vector<index::NodeId>& next) {
    for (index::NodeId id : next) {
        if (id >= nodes_ || ahead_[id].exchange(true, std::memory_order_relaxed)) continue;
        if (ssd_->read_ahead(id) == 0)
            read_ahead_.fetch_add(1, std::memory_order_relaxed);
        else // not verified (any more), or gone: asked again next round
            ahead_[id].store(false, std::memory_order_relaxed);
    }
}

cache::BlobRef KernelFiles::warm(index::NodeId id, bool demanded) {
    cache::BlobRef b = ssd_->warm(id, demanded);
    if (b) warmed_.fetch_add(1, std::memory_order_relaxed);
    return b;
}

// An entry not verified, or whose checked pages left the page cache (a
// prefetch's warm evicted before the open, under a tight memory budget),
// is checked here, through the page cache, and handed over after all. The
// open waits for one read of the entry either way: served by the daemon
// instead, it would also be copied into the mount's page cache (a second
// copy in memory) and its next open would need the same check again.
// Measured on SSD-640 before this: under `resident` every later-epoch open
// went that way (9,440 of 9,440 refused as uncached).
int KernelFiles::open(index::NodeId id, bool check) {
    if (!on()) return -ENOTSUP;
    int fd = ssd_->open_for_kernel(id);
    if (fd == -EAGAIN) unverified_.fetch_add(1, std::memory_order_relaxed);
    if (fd == -ENODATA) uncached_.fetch_add(1, std::memory_order_relaxed);
    if (check && (fd == -EAGAIN || fd == -ENODATA) && ssd_->warm(id)) {
        warmed_at_open_.fetch_add(1, std::memory_order_relaxed);
        fd = ssd_->open_for_kernel(id);
    }
    return fd;
}

void KernelFiles::count(bool handed) {
    (handed ? handed_ : refused_).fetch_add(1, std::memory_order_relaxed);
    if (handed) ssd_->served_by_kernel();
}

void KernelFiles::closed(index::NodeId id, bool clairvoyant) {
    if (id < nodes_) ahead_[id].store(false, std::memory_order_relaxed);
    if (!clairvoyant || !ssd_ || !drop_behind()) return;
    if (ssd_->drop_pages(id) == 0) dropped_.fetch_add(1, std::memory_order_relaxed);
}

void KernelFiles::status(nlohmann::json& ssd) const {
    if (ssd_) {
        const cache::SsdState st = ssd_->state();
        ssd["verified"] = st.verified;
        ssd["open_files"] = st.open_files;
    }
    ssd["kernel"] = {{"on", on()},
                     {"opens", handed_.load(std::memory_order_relaxed)},
                     {"refused", refused_.load(std::memory_order_relaxed)},
                     {"unverified_opens", unverified_.load(std::memory_order_relaxed)},
                     {"uncached_opens", uncached_.load(std::memory_order_relaxed)},
                     {"warmed", warmed_.load(std::memory_order_relaxed)},
                     {"warmed_at_open", warmed_at_open_.load(std::memory_order_relaxed)},
                     {"check", ssd_ && ssd_->checks_once() ? "once" : "resident"},
                     {"read_ahead", read_ahead_.load(std::memory_order_relaxed)},
                     {"drop_behind", drop_behind()},
                     {"pages_dropped", dropped_.load(std::memory_order_relaxed)}};
}

} // namespace clairfs::prefetch
