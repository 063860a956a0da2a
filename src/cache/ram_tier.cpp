// SPDX-License-Identifier: MIT
#include "clairfs/cache/ram_tier.hpp"

#include <thread>
#include <utility>

namespace clairfs::cache {

namespace {

constexpr uint8_t lock_bit = 1;
constexpr uint8_t held_bit = 2;
constexpr uint8_t kernel_bit = 4; // the kernel's page cache holds the file

} // namespace

// A slot's lock is held for a reference-count move, so spinning beats
// sleeping; yielding keeps a preempted holder from costing a whole slice.
class RamTier::SlotLock {
public:
    explicit SlotLock(std::atomic<uint8_t>& state) : state_(state) {
        while (state_.fetch_or(lock_bit, std::memory_order_acquire) & lock_bit)
            while (state_.load(std::memory_order_relaxed) & lock_bit) std::this_thread::yield();
    }
    ~SlotLock() { state_.fetch_and(static_cast<uint8_t>(~lock_bit), std::memory_order_release); }
    SlotLock(const SlotLock&) = delete;
    SlotLock& operator=(const SlotLock&) = delete;

    // Under the lock: the slot now holds a file, or no longer does.
    void set_held(bool held) { set(held_bit, held); }
    void set_kernel(bool kernel) { set(kernel_bit, kernel); }
    bool kernel() const { return state_.load(std::memory_order_relaxed) & kernel_bit; }

private:
    void set(uint8_t bit, bool on) {
        if (on)
            state_.fetch_or(bit, std::memory_order_release);
        else
            state_.fetch_and(static_cast<uint8_t>(~bit), std::memory_order_release);
    }
    std::atomic<uint8_t>& state_;
};

RamTier::RamTier(uint64_t capacity, size_t nodes)
    : capacity_(capacity), nodes_(nodes), blobs_(std::make_unique<BlobRef[]>(nodes)),
      state_(std::make_unique<std::atomic<uint8_t>[]>(nodes)) {}

BlobRef RamTier::copy_of(index::NodeId id) const {
    if (id >= nodes_) return nullptr;
    SlotLock lk(state_[id]);
    return blobs_[id];
}

BlobRef RamTier::get(index::NodeId id) {
    BlobRef b = copy_of(id);
    if (!b && in_kernel(id)) {
        // Served from the kernel's page cache: a hit of this tier, whose
        // bytes the kernel holds for it.
        hits_.fetch_add(1, std::memory_order_relaxed);
        kernel_hits_.fetch_add(1, std::memory_order_relaxed);
        return b;
    }
    (b ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
    return b;
}

BlobRef RamTier::peek(index::NodeId id) const {
    return copy_of(id);
}

bool RamTier::contains(index::NodeId id) const {
    return id < nodes_ && (state_[id].load(std::memory_order_acquire) & (held_bit | kernel_bit));
}

bool RamTier::in_kernel(index::NodeId id) const {
    return id < nodes_ && (state_[id].load(std::memory_order_acquire) & kernel_bit);
}

// The budget counts a file once, wherever its bytes are: the reservation a
// put() made moves with the bytes to the kernel, and kernel_lost() (or an
// eviction, which drops the kernel's pages first) returns it.
bool RamTier::hand_over(index::NodeId id, uint64_t size) {
    if (id >= nodes_) return false;
    BlobRef dropped; // freed after the lock, as in evict()
    {
        SlotLock lk(state_[id]);
        BlobRef& slot = blobs_[id];
        if (lk.kernel()) return true;
        if (slot) {
            dropped = std::move(slot);
            slot.reset();
            lk.set_held(false);
            entries_.fetch_sub(1, std::memory_order_relaxed);
            // The reservation was the blob's size, which is the file's.
            if (dropped->size != size) {
                bytes_.fetch_add(size, std::memory_order_relaxed);
                bytes_.fetch_sub(dropped->size, std::memory_order_relaxed);
            }
        } else if (!reserve(size)) {
            return false; // evicted while open, and no room now: left unaccounted
        }
        lk.set_kernel(true);
        kernel_files_.fetch_add(1, std::memory_order_relaxed);
        kernel_bytes_.fetch_add(size, std::memory_order_relaxed);
    }
    if (dropped) handed_over_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

bool RamTier::kernel_lost(index::NodeId id, uint64_t size) {
    if (!in_kernel(id)) return false;
    SlotLock lk(state_[id]);
    if (!lk.kernel()) return false; // another thread got there first
    lk.set_kernel(false);
    kernel_files_.fetch_sub(1, std::memory_order_relaxed);
    kernel_bytes_.fetch_sub(size, std::memory_order_relaxed);
    bytes_.fetch_sub(size, std::memory_order_relaxed);
    return true;
}

RamTier::KernelStats RamTier::kernel_stats() const {
    KernelStats k;
    k.files = kernel_files_.load(std::memory_order_relaxed);
    k.bytes = kernel_bytes_.load(std::memory_order_relaxed);
    k.handed_over = handed_over_.load(std::memory_order_relaxed);
    k.hits = kernel_hits_.load(std::memory_order_relaxed);
    return k;
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
    SlotLock lk(state_[id]);
    BlobRef& slot = blobs_[id];
    if (slot) return true;
    if (lk.kernel()) {
        // Reserved already, as the kernel's: the reservation moves back.
        lk.set_kernel(false);
        kernel_files_.fetch_sub(1, std::memory_order_relaxed);
        kernel_bytes_.fetch_sub(blob->size, std::memory_order_relaxed);
    } else if (!reserve(blob->size)) {
        rejected_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    slot = std::move(blob);
    entries_.fetch_add(1, std::memory_order_relaxed);
    lk.set_held(true);
    return true;
}

uint64_t RamTier::evict(index::NodeId id) {
    if (id >= nodes_) return 0;
    // Taken out under the slot's lock but released after it: if this was
    // the last reference, freeing a large sample (munmap) must not stall a
    // reader of the same file.
    BlobRef dropped;
    {
        SlotLock lk(state_[id]);
        BlobRef& slot = blobs_[id];
        if (!slot) return 0;
        dropped = std::move(slot);
        slot.reset();
        lk.set_held(false);
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
        if (state_[id].load(std::memory_order_relaxed) & (held_bit | kernel_bit))
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
