// SPDX-License-Identifier: MIT
#include "chunk_read.hpp"
#include "read_through.hpp"

namespace clairfs::fuse {

void chunk_read(fuse_req_t req, Filesystem& fs, index::NodeId id, size_t size,
                uint64_t off) {
    // Replied from the chunks' own bytes, held here until the reply is
    // written: a readahead READ of --max-read spans two chunks more often
    // than not, and copying it into one buffer first cost a copy of every
    // byte on the ring thread (bench/RESULTS.md, TFRecord 2026-12-07).
    prefetch::ChunkPieces pieces;
    if (int rc = fs.engine->chunks()->read_pieces(id, off, size, pieces); rc < 0)
        return reply_error(req, rc);
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(size, std::memory_order_relaxed);
    fuse_reply_iov(req, pieces.parts.data(), static_cast<int>(pieces.parts.size()));
}

} // namespace clairfs::fuse
