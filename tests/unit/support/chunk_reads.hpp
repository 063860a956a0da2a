// SPDX-License-Identifier: MIT
// A READ through ChunkStore::read_pieces, its parts copied out, as the
// chunk tests compare bytes: the FUSE layer replies with the parts
// themselves (fuse_reply_iov).
#pragma once

#include "clairfs/prefetch/chunk_store.hpp"

#include <cstring>
#include <sys/types.h>

namespace clairfs::test {

// size on success, else -errno.
inline ssize_t read_chunks(prefetch::ChunkStore& store, index::NodeId node, uint64_t off,
                           size_t size, char* out) {
    prefetch::ChunkPieces pieces;
    if (int rc = store.read_pieces(node, off, size, pieces); rc < 0) return rc;
    for (const iovec& part : pieces.parts) {
        std::memcpy(out, part.iov_base, part.iov_len);
        out += part.iov_len;
    }
    return static_cast<ssize_t>(size);
}

} // namespace clairfs::test
