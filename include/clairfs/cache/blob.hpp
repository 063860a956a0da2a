// SPDX-License-Identifier: MIT
// A whole file's bytes, shared by reference: a tier that evicts it only
// drops its own reference, so a FUSE reply still copying from it is safe.
#pragma once

#include "clairfs/cache/blob_arena.hpp"

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace clairfs::cache {

// Frees a buffer where it came from: the blob arena, or the heap.
struct BlobFree {
    BlobArena* arena = nullptr;
    uint64_t length = 0; // the arena extent's
    void operator()(char* p) const noexcept {
        if (arena)
            arena->release(p, length);
        else
            std::free(p);
    }
};

struct Blob {
    // The SSD tier reads and writes blobs with O_DIRECT, which wants the
    // address and the length aligned to the device's block size.
    static constexpr uint64_t alignment = 4096;

    std::unique_ptr<char[], BlobFree> bytes;
    uint64_t size = 0;
    // Bytes allocated at `bytes`: `size` rounded up to `alignment` (one block
    // for an empty file); 0 for a blob not made by make(), which the SSD
    // tier then copies before a direct write.
    uint64_t capacity = 0;

    // bytes[0, size) uninitialised; bytes[size, capacity) zero, so a direct
    // write of whole blocks puts nothing but the file on disk. From `arena`
    // while it has room, else from the heap.
    static std::shared_ptr<Blob> make(uint64_t size, BlobArena* arena = BlobArena::installed());

    static constexpr uint64_t round_up(uint64_t n) {
        return (n + alignment - 1) & ~(alignment - 1);
    }
};

using BlobRef = std::shared_ptr<const Blob>;

} // namespace clairfs::cache
