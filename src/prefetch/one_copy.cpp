// SPDX-License-Identifier: MIT
// One copy (--one-copy): a file the RAM tier holds and the kernel's page
// cache of the mount holds too is in memory twice, charged to the same
// memory cgroup when the job and the daemon share one; with the dataset in
// the tier the page cache then crowds out the job's own memory and the job
// spends its CPU in reclaim (bench/RESULTS.md, "One copy"). So the pages
// go when the file's last open is released, and the next open pushes them
// again. A file the tier lacks keeps its pages: there they are the only
// copy, and the kernel keeps them while it has room. The drop also makes
// the next fstat ask for the attributes again (FUSE_NOTIFY_INVAL_INODE
// invalidates both, and no notification drops pages alone): a GETATTR
// round trip, and the push at every open is a copy; where the page cache
// has room for both copies they buy nothing, so by default (automatic)
// pages are dropped only while the tier's bytes would take more than half
// of that room (OneCopy::weigh).
#include "one_copy.hpp"

#include "clairfs/log.hpp"
#include "crowds_room.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

OneCopy::OneCopy(config::When mode, size_t files) : mode_(mode) {
    if (mode == config::When::never) return;
    open_count_ = std::make_unique<std::atomic<uint32_t>[]>(files); // all 0
    dropping_.store(mode == config::When::always);
}

bool OneCopy::last_release(index::NodeId id) {
    // An open racing this release may push before the drop lands: its
    // reads then make READs, which the tier answers.
    if (open_count_[id].fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    return dropping_.load(std::memory_order_relaxed);
}

bool OneCopy::last_close(index::NodeId id) {
    if (!on()) return false;
    uint32_t c = open_count_[id].load(std::memory_order_relaxed);
    do {
        if (c == 0) return false;
    } while (!open_count_[id].compare_exchange_weak(c, c - 1, std::memory_order_acq_rel));
    return c == 1 && dropping_.load(std::memory_order_relaxed);
}

// The room is the memory this process may use less what reclaim cannot
// free (config/memory_budget.hpp); the RAM tier's bytes are what the page
// cache would hold a second time. They count in the anonymous memory, so
// the room does not move with the choice (crowds_room: on above half of
// it, off below a third).
void OneCopy::weigh(uint64_t held, uint64_t room) {
    const bool was = dropping_.load(std::memory_order_relaxed);
    const bool now_dropping = crowds_room(was, held, room);
    if (now_dropping == was) return;
    dropping_.store(now_dropping, std::memory_order_relaxed);
    switches_.fetch_add(1, std::memory_order_relaxed);
    LOG_INFO("one copy %s: the RAM tier holds %.0f MiB, the page cache has room for %.0f MiB%s",
             now_dropping ? "on" : "off", held / 1048576.0, room / 1048576.0,
             now_dropping ? "; files leave the page cache at their last close"
                          : "; the page cache keeps a second copy");
}

void OneCopy::status(nlohmann::json& prefetch, uint64_t room) const {
    prefetch["close_drops"] = drops_.load(std::memory_order_relaxed);
    prefetch["close_drop_errors"] = drop_errors_.load(std::memory_order_relaxed);
    prefetch["one_copy"] = {
        {"mode", config::when_name(on() ? mode_ : config::When::never)},
        {"dropping", dropping_.load(std::memory_order_relaxed)},
        {"room_bytes", room == UINT64_MAX ? nlohmann::json(nullptr) : nlohmann::json(room)},
        {"switches", switches_.load(std::memory_order_relaxed)}};
}

} // namespace clairfs::prefetch
