// SPDX-License-Identifier: MIT
#include "clairfs/cache/ram_tier.hpp"

#include <thread>
#include <utility>

namespace clairfs::cache {

// A slot's lock is held for a reference-count move, so spinning beats
// sleeping; yielding keeps a preempted holder from costing a whole slice.
class RamTier::SlotLock {
public:
    explicit SlotLock(const Slot& s) : lock_(s.lock) {
        while (lock_.exchange(1, std::memory_order_acquire) != 0)
            while (lock_.load(std::memory_order_relaxed) != 0) std::this_thread::yield();
    }
    ~SlotLock() { lock_.store(0, std::memory_order_release); }
    SlotLock(const SlotLock&) = delete;
    SlotLock& operator=(const SlotLock&) = delete;

private:
    std::atomic<uint8_t>& lock_;
};

RamTier::RamTier(uint64_t capacity, size_t nodes)
    : capacity_(capacity), nodes_(nodes), slots_(std::make_unique<Slot[]>(nodes)),
      resident_(std::make_unique<std::atomic<uint8_t>[]>(nodes)) {}

BlobRef RamTier::copy_of(index::NodeId id) const {
    if (id >= nodes_) return nullptr;
    const Slot& s = slots_[id];
    SlotLock lk(s);
    return s.blob;
}

BlobRef RamTier::get(index::NodeId id) {
    BlobRef b = copy_of(id);
    (b ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    return b;
}

BlobRef RamTier::peek(index::NodeId id) const {
    return copy_of(id);
}

bool RamTier::contains(index::NodeId id) const {
    return id < nodes_ && resident_[id].load(std::memory_order_acquire) != 0;
}

// Takes `size` bytes of the budget if they are free. Written so that it
// cannot overflow whatever size a caller passes.
bool RamTier::reserve(uint64_t size) {
    uint64_t used = bytes_.load(std::memory_order_relaxed);
    do {
        if (size > capacity_ - used) return false;
    } while (!bytes_.compare_exchange_weak(used, used + size, std::memory_order_relaxed));
    return true;
}

bool RamTier::put(index::NodeId id, BlobRef blob) {
    if (!blob || id >= nodes_) return false;
    Slot& s = slots_[id];
    SlotLock lk(s);
    if (s.blob) return true;
    if (!reserve(blob->size)) {
        rejected_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    s.blob = std::move(blob);
    entries_.fetch_add(1, std::memory_order_relaxed);
    resident_[id].store(1, std::memory_order_release);
    return true;
}

uint64_t RamTier::evict(index::NodeId id) {
    if (id >= nodes_) return 0;
    // Taken out under the slot's lock but released after it: if this was
    // the last reference, freeing a large sample (munmap) must not stall a
    // reader of the same file.
    BlobRef dropped;
    {
        Slot& s = slots_[id];
        SlotLock lk(s);
        if (!s.blob) return 0;
        dropped = std::move(s.blob);
        s.blob.reset();
        resident_[id].store(0, std::memory_order_release);
        bytes_.fetch_sub(dropped->size, std::memory_order_relaxed);
        entries_.fetch_sub(1, std::memory_order_relaxed);
    }
    evictions_.fetch_add(1, std::memory_order_relaxed);
    return dropped->size;
}

// One byte per node: a million nodes are scanned in well under a
// millisecond, and only by a scheduler round that must evict.
void RamTier::held(std::vector<index::NodeId>& out) const {
    for (size_t id = 0; id < nodes_; ++id)
        if (resident_[id].load(std::memory_order_relaxed))
            out.push_back(static_cast<index::NodeId>(id));
}

TierStats RamTier::stats() const {
    TierStats s;
    s.capacity = capacity_;
    s.bytes = bytes_.load(std::memory_order_relaxed);
    s.entries = entries_.load(std::memory_order_relaxed);
    s.hits = hits_.load(std::memory_order_relaxed);
    s.misses = misses_.load(std::memory_order_relaxed);
    s.evictions = evictions_.load(std::memory_order_relaxed);
    s.rejected = rejected_.load(std::memory_order_relaxed);
    return s;
}

} // namespace clairfs::cache
