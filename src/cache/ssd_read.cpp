// SPDX-License-Identifier: MIT
// Reads from the SSD tier: look the extent up and pin it under the lock,
// read and verify without it, then unpin. The pin is what lets an evict
// and a put into the same space run meanwhile without the put overwriting
// bytes this read is still taking.
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <new>
#include <xxhash.h>

namespace clairfs::cache {

void SsdTier::Core::pin(const SsdEntry& e) {
    if (e.size > 0) ++readers[e.offset];
}

void SsdTier::Core::unpin(const SsdEntry& e) {
    if (e.size == 0) return;
    auto it = readers.find(e.offset);
    if (--it->second > 0) return;
    readers.erase(it);
    if (auto r = retired.find(e.offset); r != retired.end()) {
        extents.release(e.offset, r->second);
        retired.erase(r);
    }
}

void SsdTier::Core::free_extent(const SsdEntry& e) {
    if (e.size == 0) return;
    if (readers.contains(e.offset))
        retired.emplace(e.offset, e.size);
    else
        extents.release(e.offset, e.size);
}

void SsdTier::Core::set_resident(index::NodeId id, bool held) {
    if (id < nodes) resident[id].store(held ? 1 : 0, std::memory_order_release);
}

bool SsdTier::Core::remove_locked(index::NodeId id, SsdEntry& out) {
    auto it = files.find(id);
    if (it == files.end()) return false;
    out = it->second;
    files.erase(it);
    set_resident(id, false);
    free_extent(out);
    stats.bytes -= out.size;
    stats.entries = files.size();
    return true;
}

BlobRef SsdTier::Core::read(index::NodeId id, bool count) {
    SsdEntry e;
    if (!pin_entry(id, count, e)) return nullptr;
    std::shared_ptr<Blob> blob;
    int rv = read_entry(e, blob);
    bool intact = rv == 0 && XXH3_64bits(blob->bytes.get(), e.size) == e.checksum;
    uint64_t seq = 0;
    bool dropped = settle_read(id, e, count, intact, rv, seq);
    if (intact) return blob;
    read_failed(id, e, rv, dropped, seq);
    return nullptr;
}

bool SsdTier::Core::pin_entry(index::NodeId id, bool count, SsdEntry& e) {
    std::lock_guard lk(mu);
    auto it = enabled.load() ? files.find(id) : files.end();
    if (it == files.end()) {
        if (count) ++stats.misses;
        return false;
    }
    e = it->second;
    pin(e);
    return true;
}

int SsdTier::Core::read_entry(const SsdEntry& e, std::shared_ptr<Blob>& blob) {
    int rv = 0;
    try {
        blob = Blob::make(e.size);
    } catch (const std::bad_alloc&) {
        rv = -ENOMEM;
    }
    if (blob && e.size > 0)
        rv = device->read(blob->bytes.get(), ExtentAllocator::aligned(e.size), e.offset);
    return rv;
}

// A failed or corrupt read drops the entry, unless it was already evicted
// and put again (another seq) while this read ran.
bool SsdTier::Core::settle_read(index::NodeId id, const SsdEntry& e, bool count, bool intact,
                                int rv, uint64_t& seq) {
    SsdEntry dropped;
    bool drop = false;
    std::lock_guard lk(mu);
    unpin(e);
    if (count) ++(intact ? stats.hits : stats.misses);
    if (intact) {
        ++counters.reads;
        counters.bytes_read += e.size;
    } else if (rv != -ENOMEM) {
        auto it = files.find(id);
        drop = it != files.end() && it->second.seq == e.seq && remove_locked(id, dropped);
        if (drop) seq = next_seq++;
    }
    return drop;
}

void SsdTier::Core::read_failed(index::NodeId id, const SsdEntry& e, int rv, bool dropped,
                                uint64_t seq) {
    if (rv == -ENOMEM) {
        LOG_WARN("ssd tier: no memory for a %s file (node %u)", human_bytes(e.size).c_str(), id);
        return;
    }
    if (dropped) journal_evict(id, seq);
    uint64_t len = ExtentAllocator::aligned(e.size);
    if (rv < 0)
        fail(true, "ssd tier: read of " + where(len, e.offset) + " failed: " + sys::error_text(rv) +
                       "; entry dropped");
    else
        fail(false, "ssd tier: checksum mismatch for node " + std::to_string(id) + " (" +
                        where(len, e.offset) + "); entry dropped, not served");
}

BlobRef SsdTier::get(index::NodeId id) {
    return core_->read(id, true);
}

BlobRef SsdTier::peek(index::NodeId id) const {
    return core_->read(id, false);
}

bool SsdTier::contains(index::NodeId id) const {
    if (id < core_->nodes) return core_->resident[id].load(std::memory_order_acquire) != 0;
    std::lock_guard lk(core_->mu);
    return core_->files.contains(id);
}

void SsdTier::held(std::vector<index::NodeId>& out) const {
    std::lock_guard lk(core_->mu);
    out.reserve(out.size() + core_->files.size());
    for (const auto& [id, e] : core_->files) out.push_back(id);
}

} // namespace clairfs::cache
