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
    // Drops the tier's own copy (not a file only the kernel holds: 0).
    uint64_t evict(index::NodeId id) override;
    // Held here or by the kernel for this tier.
    void held(std::vector<index::NodeId>& out) const override;
    // Each counter is exact; read while other threads put and evict, bytes
    // and entries may belong to moments a few operations apart.
    TierStats stats() const override;

    // Hand-over: a file whose every byte the kernel's page cache of the
    // mount now holds (served by READs, or pushed) need not be held here
    // as well; a byte in RAM twice halves what a memory budget holds.
    // hand_over() drops the tier's copy (freed when the last reader lets
    // go) and marks the file as the kernel's: contains() stays true, so
    // the prefetcher does not fetch it again, get() counts a hit, held()
    // lists it (an eviction victim: the caller drops the kernel's pages,
    // then calls kernel_lost()). The budget counts it as before: bytes in
    // the page cache are memory all the same. False (and no mark) for a
    // file not held here when its size does not fit the budget.
    bool hand_over(index::NodeId id, uint64_t size);
    // The kernel no longer holds the file (it asked for bytes of it, or
    // forgot its inode, or the caller dropped its pages): true if it was
    // marked the kernel's, and its bytes leave the budget.
    bool kernel_lost(index::NodeId id, uint64_t size);
    bool in_kernel(index::NodeId id) const;
    struct KernelStats {
        uint64_t files = 0, bytes = 0; // marked the kernel's now
        uint64_t handed_over = 0;      // hand_over() calls that dropped a copy
        uint64_t hits = 0;             // get() of a file only the kernel holds
    };
    KernelStats kernel_stats() const;

private:
    class SlotLock;
    bool reserve(uint64_t size);
    BlobRef copy_of(index::NodeId id) const;

    const uint64_t capacity_;
    const size_t nodes_;
    // Per node, 17 bytes in all: the blob, and a state byte holding the
    // slot's lock bit, its held bit and its kernel bit (hand_over()).
    //
    // The lock bit guards the node's blob. Lock order: leaf. Held only to
    // copy, install or take out the reference (a count moves): never
    // across an allocation, a free or I/O, so a spin is always short.
    //
    // The held and kernel bits are written under the lock with the blob
    // and read without it (contains(), held()): a reader racing a put or an
    // evict sees the state before or after it.
    std::unique_ptr<BlobRef[]> blobs_;
    std::unique_ptr<std::atomic<uint8_t>[]> state_;
    std::atomic<uint64_t> bytes_{0}; // never above capacity_: reserved by CAS
    std::atomic<uint64_t> entries_{0}, hits_{0}, misses_{0}, evictions_{0}, rejected_{0};
    std::atomic<uint64_t> kernel_files_{0}, kernel_bytes_{0}, handed_over_{0}, kernel_hits_{0};
};

} // namespace clairfs::cache
