// SPDX-License-Identifier: MIT
#include "extent_allocator.hpp"

#include <cassert>
#include <iterator>

namespace clairfs::cache {

ExtentAllocator::ExtentAllocator(uint64_t capacity) : capacity_(capacity & ~(alignment - 1)) {
    if (capacity_ > 0) add_free(0, capacity_);
}

void ExtentAllocator::add_free(uint64_t offset, uint64_t length) {
    by_offset_.emplace(offset, length);
    by_size_.emplace(length, offset);
    free_ += length;
}

void ExtentAllocator::remove_free(std::map<uint64_t, uint64_t>::iterator it) {
    by_size_.erase({it->second, it->first});
    free_ -= it->second;
    by_offset_.erase(it);
}

std::optional<uint64_t> ExtentAllocator::allocate(uint64_t length) {
    if (length == 0) return 0;
    uint64_t want = aligned(length);
    if (want < length) return std::nullopt; // a length near 2^64 wrapped
    // The shortest free extent that fits, lowest offset among equals: the
    // long ones stay whole for the large files that need them.
    auto fit = by_size_.lower_bound({want, 0});
    if (fit == by_size_.end()) return std::nullopt;
    auto [have, offset] = *fit;
    remove_free(by_offset_.find(offset));
    if (have > want) add_free(offset + want, have - want);
    return offset;
}

bool ExtentAllocator::reserve(uint64_t offset, uint64_t length) {
    if (length == 0) return true;
    uint64_t want = aligned(length);
    if (want < length || offset % alignment != 0 || offset > capacity_ || want > capacity_ - offset)
        return false;
    auto it = by_offset_.upper_bound(offset);
    if (it == by_offset_.begin()) return false;
    --it;
    auto [start, have] = *it;
    if (offset + want > start + have) return false;
    remove_free(it);
    if (offset > start) add_free(start, offset - start);
    if (start + have > offset + want) add_free(offset + want, start + have - offset - want);
    return true;
}

void ExtentAllocator::release(uint64_t offset, uint64_t length) {
    if (length == 0) return;
    uint64_t len = aligned(length);
    auto next = by_offset_.lower_bound(offset);
    assert(next == by_offset_.end() || next->first >= offset + len);
    if (next != by_offset_.end() && next->first == offset + len) {
        len += next->second;
        auto after = std::next(next);
        remove_free(next);
        next = after;
    }
    if (next != by_offset_.begin()) {
        auto prev = std::prev(next);
        assert(prev->first + prev->second <= offset);
        if (prev->first + prev->second == offset) {
            offset = prev->first;
            len += prev->second;
            remove_free(prev);
        }
    }
    add_free(offset, len);
}

uint64_t ExtentAllocator::largest_free() const {
    return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

} // namespace clairfs::cache
