// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/cache/tier.hpp"

#include <mutex>
#include <unordered_map>

namespace clairfs::cache {

// Whole files in memory under a hard byte budget. Held files are shared
// references, so evicting one never frees bytes a FUSE reply is copying.
class RamTier final : public Tier {
public:
    explicit RamTier(uint64_t capacity);

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
};

} // namespace clairfs::cache
