// SPDX-License-Identifier: MIT
#include "clairfs/cache/blob.hpp"

#include <cstring>
#include <new>

namespace clairfs::cache {

std::shared_ptr<Blob> Blob::make(uint64_t size) {
    auto b = std::make_shared<Blob>();
    uint64_t capacity = size == 0 ? alignment : round_up(size);
    if (capacity < size) throw std::bad_alloc(); // round_up wrapped around
    // Every byte below `size` is about to be overwritten by a read; zeroing a
    // large sample first would cost a second pass over its memory. Only the
    // tail of the last block is cleared.
    void* p = std::aligned_alloc(alignment, static_cast<size_t>(capacity));
    if (!p) throw std::bad_alloc();
    b->bytes.reset(static_cast<char*>(p));
    std::memset(b->bytes.get() + size, 0, static_cast<size_t>(capacity - size));
    b->size = size;
    b->capacity = capacity;
    return b;
}

} // namespace clairfs::cache
