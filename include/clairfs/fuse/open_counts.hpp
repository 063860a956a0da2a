// SPDX-License-Identifier: MIT
// OPENs not yet RELEASEd, by node, for the files open now only (a table
// per node would cost 4 bytes a sample for a rule about a few hundred open
// files). Sharded, so that the opens of the FUSE threads rarely meet.
#pragma once

#include "clairfs/index/node.hpp"

#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace clairfs::fuse {

class OpenCounts {
public:
    void opened(index::NodeId id) {
        Shard& s = shard(id);
        std::lock_guard lk(s.mu);
        ++s.open[id];
    }
    void closed(index::NodeId id) {
        Shard& s = shard(id);
        std::lock_guard lk(s.mu);
        auto it = s.open.find(id);
        if (it != s.open.end() && --it->second == 0) s.open.erase(it);
    }
    uint32_t of(index::NodeId id) const {
        const Shard& s = shard(id);
        std::lock_guard lk(s.mu);
        auto it = s.open.find(id);
        return it == s.open.end() ? 0 : it->second;
    }

private:
    struct Shard {
        mutable std::mutex mu; // leaf; guards open
        std::unordered_map<index::NodeId, uint32_t> open;
    };
    Shard& shard(index::NodeId id) { return shards_[id % shards_.size()]; }
    const Shard& shard(index::NodeId id) const { return shards_[id % shards_.size()]; }
    std::array<Shard, 64> shards_{};
};

} // namespace clairfs::fuse
