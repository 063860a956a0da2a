// SPDX-License-Identifier: MIT
#include "clairfs/cache/blob.hpp"

#include <cstring>
#include <new>

namespace clairfs::cache {

std::shared_ptr<Blob> Blob::make(uint64_t size, BlobArena* arena) {
    auto b = std::make_shared<Blob>();
    uint64_t capacity = size == 0 ? alignment : round_up(size);
    if (capacity < size) throw std::bad_alloc(); // round_up wrapped around
    // Every byte below `size` is about to be overwritten by a read; zeroing a
    // large sample first would cost a second pass over its memory. Only the
    // tail of the last block is cleared.
    if (char* p = arena ? arena->allocate(capacity) : nullptr) {
        b->bytes = std::unique_ptr<char[], BlobFree>(p, BlobFree{arena, capacity});
    } else {
        if (arena) arena->count_overflow();
        void* h = std::aligned_alloc(alignment, static_cast<size_t>(capacity));
        if (!h) throw std::bad_alloc();
        b->bytes.reset(static_cast<char*>(h));
    }
    std::memset(b->bytes.get() + size, 0, static_cast<size_t>(capacity - size));
    b->size = size;
    b->capacity = capacity;
    return b;
}

} // namespace clairfs::cache
