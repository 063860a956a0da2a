// SPDX-License-Identifier: MIT
// Free space of the SSD cache file: whole-file extents aligned to 4 KiB,
// best fit, with neighbouring free extents merged as they are released, so
// a long run of evictions and puts of assorted sizes does not fragment the
// file into pieces no sample fits in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace clairfs::cache {

class ExtentAllocator {
public:
    static constexpr uint64_t alignment = 4096;
    static constexpr uint64_t aligned(uint64_t n) { return (n + alignment - 1) & ~(alignment - 1); }

    // All of [0, capacity rounded down to the alignment) starts free.
    explicit ExtentAllocator(uint64_t capacity);

    // Offset of a free extent of aligned(length) bytes, or nothing when no
    // free extent is that long. A zero length takes no space and gets 0.
    // O(log n) in the number of free extents.
    std::optional<uint64_t> allocate(uint64_t length);
    // Marks [offset, offset + aligned(length)) used, for entries found in the
    // journal at open; false (and nothing changed) unless the offset is
    // aligned and the whole range is free.
    bool reserve(uint64_t offset, uint64_t length);
    // Returns an extent from allocate() or reserve() to the free space.
    void release(uint64_t offset, uint64_t length);

    uint64_t capacity() const { return capacity_; }
    uint64_t free_bytes() const { return free_; }
    uint64_t used_bytes() const { return capacity_ - free_; }
    uint64_t largest_free() const;
    // Calls f(offset, length) for each free extent, by offset.
    template <class F> void for_each_free(F&& f) const {
        for (const auto& [off, len] : by_offset_) f(off, len);
    }
    size_t free_extents() const { return by_offset_.size(); }

private:
    void add_free(uint64_t offset, uint64_t length);
    void remove_free(std::map<uint64_t, uint64_t>::iterator it);

    uint64_t capacity_;
    uint64_t free_ = 0;
    std::map<uint64_t, uint64_t> by_offset_;          // offset -> length
    std::set<std::pair<uint64_t, uint64_t>> by_size_; // (length, offset)
};

} // namespace clairfs::cache
