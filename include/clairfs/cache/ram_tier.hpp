// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/cache/tier.hpp"

#include <atomic>
#include <cstddef>
#include <memory>

namespace clairfs::cache {

// Whole files in memory under a hard byte budget. Held files are shared
// references, so evicting one never frees bytes a FUSE reply is copying.
//
// Indexed by the dense node id: one slot per node, each with its own tiny
// lock, so FUSE threads looking up different files never wait on each
// other, and two looking up the same file wait only for a reference count
// to move. The budget is one atomic counter, reserved before a file goes in.
class RamTier final : public Tier {
public:
    // `nodes`: the index's node count; ids at or above it are never held
    // (put refuses them). The default suits tests that make up small ids.
    explicit RamTier(uint64_t capacity, size_t nodes = size_t{1} << 16);

    const char* name() const override { return "ram"; }
    BlobRef get(index::NodeId id) override;
    BlobRef peek(index::NodeId id) const override;
    bool contains(index::NodeId id) const override;
    bool put(index::NodeId id, BlobRef blob) override;
    uint64_t evict(index::NodeId id) override;
    void held(std::vector<index::NodeId>& out) const override;
    // Each counter is exact; read while other threads put and evict, bytes
    // and entries may belong to moments a few operations apart.
    TierStats stats() const override;

private:
    class SlotLock;
    bool reserve(uint64_t size);
    BlobRef copy_of(index::NodeId id) const;

    const uint64_t capacity_;
    const size_t nodes_;
    // Per node, 17 bytes in all: the blob, and a state byte holding the
    // slot's lock bit and its held bit.
    //
    // The lock bit guards the node's blob. Lock order: leaf. Held only to
    // copy, install or take out the reference (a count moves): never
    // across an allocation, a free or I/O, so a spin is always short.
    //
    // The held bit is written under the lock with the blob and read
    // without it (contains(), held()): a reader racing a put or an evict
    // sees the state before or after it.
    std::unique_ptr<BlobRef[]> blobs_;
    std::unique_ptr<std::atomic<uint8_t>[]> state_;
    std::atomic<uint64_t> bytes_{0}; // never above capacity_: reserved by CAS
    std::atomic<uint64_t> entries_{0}, hits_{0}, misses_{0}, evictions_{0}, rejected_{0};
};

} // namespace clairfs::cache
