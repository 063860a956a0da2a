// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/cache/tier.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace clairfs::cache {

// Whole files in memory under a hard byte budget. Held files are shared
// references, so evicting one never frees bytes a FUSE reply is copying.
class RamTier final : public Tier {
public:
    // `nodes`: the index's node count. With it, contains() answers from a
    // byte per node without the lock, which the prefetch scheduler asks for
    // thousands of files a round; 0 keeps only the map.
    explicit RamTier(uint64_t capacity, size_t nodes = 0);

    const char* name() const override { return "ram"; }
    BlobRef get(index::NodeId id) override;
    BlobRef peek(index::NodeId id) const override;
    bool contains(index::NodeId id) const override;
    bool put(index::NodeId id, BlobRef blob) override;
    uint64_t evict(index::NodeId id) override;
    void held(std::vector<index::NodeId>& out) const override;
    TierStats stats() const override;

private:
    mutable std::mutex mu_; // leaf lock, held for map operations only
    std::unordered_map<index::NodeId, BlobRef> files_;
    TierStats stats_;
    // Written under mu_ with files_, read without it. A reader racing a put
    // or evict sees the state before or after it, as it would with the lock.
    std::unique_ptr<std::atomic<uint8_t>[]> resident_;
    size_t nodes_ = 0;
};

} // namespace clairfs::cache
