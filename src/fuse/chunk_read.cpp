// SPDX-License-Identifier: MIT
#include "chunk_read.hpp"

#include <memory>

namespace clairfs::fuse {

void chunk_read(fuse_req_t req, Filesystem& fs, index::NodeId id, size_t size,
                uint64_t off) {
    // The FUSE thread's buffer, grown to the largest READ (at most
    // max_read): a READ may span two chunks, so it is copied out of them.
    thread_local std::unique_ptr<char[]> buf;
    thread_local size_t capacity = 0;
    if (size > capacity) {
        buf = std::make_unique_for_overwrite<char[]>(size);
        capacity = size;
    }
    ssize_t got = fs.engine->chunks()->read(id, off, size, buf.get());
    if (got < 0) return reply_error(req, static_cast<int>(got));
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(static_cast<uint64_t>(got), std::memory_order_relaxed);
    fuse_reply_buf(req, buf.get(), static_cast<size_t>(got));
}

} // namespace clairfs::fuse
