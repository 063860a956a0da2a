// SPDX-License-Identifier: MIT
#include "clairfs/cache/blob.hpp"

namespace clairfs::cache {

std::shared_ptr<Blob> Blob::make(uint64_t size) {
    auto b = std::make_shared<Blob>();
    // Every byte is about to be overwritten by a read; zeroing a large
    // sample first would cost a second pass over its memory.
    b->bytes = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(size));
    b->size = size;
    return b;
}

} // namespace clairfs::cache
