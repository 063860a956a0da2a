// SPDX-License-Identifier: MIT
#include "read_drops.hpp"

#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace clairfs::prefetch {
namespace {

using namespace std::chrono_literals;

// A file read is dropped from the kernel's page cache once the reader has
// surely copied it out (one read() of st_blksize takes a sample whole):
// when `drop_behind` files were read after it and a little time passed, or
// at the latest after `drop_after`. Dropped any sooner, the reader's own
// read would find the pages gone and ask again (harmless, but counted as a
// second open).
constexpr size_t drop_behind = 64;
constexpr auto drop_settle = 20ms;
constexpr auto drop_after = 1s;

} // namespace

void ReadDrops::opened(index::NodeId id, bool registered) {
    if (!drop_) return;
    if (!read_any_.load(std::memory_order_relaxed)) read_any_.store(true, std::memory_order_relaxed);
    if (!registered) return;
    std::lock_guard lk(mu_);
    log_.emplace_back(id, std::chrono::steady_clock::now());
}

void ReadDrops::drop_one(index::NodeId id) {
    // ENOENT: the kernel holds no inode for it, so no pages either.
    if (int rv = drop_(id); rv == 0 || rv == -ENOENT)
        drops_.fetch_add(1, std::memory_order_relaxed);
    else
        errors_.fetch_add(1, std::memory_order_relaxed);
}

void ReadDrops::drop(bool following) {
    if (!drop_) return;
    std::vector<Stamped> fresh;
    {
        std::lock_guard lk(mu_);
        fresh.swap(log_);
    }
    // Unregistered or in fallback nothing follows the opens, and pages the
    // kernel keeps are reads saved.
    if (!following) {
        due_.clear();
        return;
    }
    if (!dropped_all_) {
        // Whatever was read before the registration may still be cached.
        // Nothing was if no file has been read since the mount (a job
        // registered with --register): then no notification per file.
        dropped_all_ = true;
        due_.clear();
        if (read_any_.load(std::memory_order_relaxed))
            for (index::NodeId id = 0; id < index_.size(); ++id)
                if (S_ISREG(index_.node(id).mode)) drop_one(id);
    }
    due_.insert(due_.end(), fresh.begin(), fresh.end());
    auto now = std::chrono::steady_clock::now();
    auto is_due = [&] {
        auto age = now - due_.front().second;
        return age >= drop_after || (due_.size() > drop_behind && age >= drop_settle);
    };
    while (!due_.empty() && is_due()) {
        drop_one(due_.front().first);
        due_.pop_front();
    }
}

void ReadDrops::status(nlohmann::json& prefetch) const {
    prefetch["page_drops"] = drops_.load(std::memory_order_relaxed);
    prefetch["page_drop_errors"] = errors_.load(std::memory_order_relaxed);
}

} // namespace clairfs::prefetch
