// SPDX-License-Identifier: MIT
#include "clairfs/cache/ram_tier.hpp"

#include <utility>

namespace clairfs::cache {

RamTier::RamTier(uint64_t capacity, size_t nodes) : nodes_(nodes) {
    stats_.capacity = capacity;
    if (nodes) resident_ = std::make_unique<std::atomic<uint8_t>[]>(nodes);
}

BlobRef RamTier::get(index::NodeId id) {
    std::lock_guard lk(mu_);
    auto it = files_.find(id);
    if (it == files_.end()) {
        ++stats_.misses;
        return nullptr;
    }
    ++stats_.hits;
    return it->second;
}

BlobRef RamTier::peek(index::NodeId id) const {
    std::lock_guard lk(mu_);
    auto it = files_.find(id);
    return it == files_.end() ? nullptr : it->second;
}

bool RamTier::contains(index::NodeId id) const {
    if (id < nodes_) return resident_[id].load(std::memory_order_acquire) != 0;
    std::lock_guard lk(mu_);
    return files_.contains(id);
}

bool RamTier::put(index::NodeId id, BlobRef blob) {
    if (!blob) return false;
    std::lock_guard lk(mu_);
    if (files_.contains(id)) return true;
    // Written so that it cannot overflow whatever size a caller passes.
    if (blob->size > stats_.capacity - stats_.bytes) {
        ++stats_.rejected;
        return false;
    }
    stats_.bytes += blob->size;
    files_.emplace(id, std::move(blob));
    stats_.entries = files_.size();
    if (id < nodes_) resident_[id].store(1, std::memory_order_release);
    return true;
}

uint64_t RamTier::evict(index::NodeId id) {
    // Taken out under the lock but released after it: if this was the last
    // reference, freeing a large sample (munmap) must not stall every reader.
    BlobRef dropped;
    {
        std::lock_guard lk(mu_);
        auto it = files_.find(id);
        if (it == files_.end()) return 0;
        dropped = std::move(it->second);
        files_.erase(it);
        if (id < nodes_) resident_[id].store(0, std::memory_order_release);
        stats_.bytes -= dropped->size;
        stats_.entries = files_.size();
        ++stats_.evictions;
    }
    return dropped->size;
}

void RamTier::held(std::vector<index::NodeId>& out) const {
    std::lock_guard lk(mu_);
    out.reserve(out.size() + files_.size());
    for (const auto& [id, blob] : files_) out.push_back(id);
}

TierStats RamTier::stats() const {
    std::lock_guard lk(mu_);
    return stats_;
}

} // namespace clairfs::cache
