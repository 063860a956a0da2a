// SPDX-License-Identifier: MIT
#include "chunk_read.hpp"
#include "read_through.hpp"

#include <memory>

namespace clairfs::fuse {

void chunk_read(fuse_req_t req, Filesystem& fs, index::NodeId id, size_t size,
                uint64_t off) {
    auto count = [&](size_t n) {
        fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
        fs.counters.read_bytes.fetch_add(n, std::memory_order_relaxed);
    };
    // Most READs lie within one chunk: replied from its bytes, held here
    // until the reply is written, which saves copying them once more.
    uint64_t at = 0;
    int error = 0;
    if (cache::BlobRef b = fs.engine->chunks()->read_one(id, off, size, at, error)) {
        count(size);
        fuse_reply_buf(req, b->bytes.get() + at, size);
        return;
    }
    if (error < 0) return reply_error(req, error);
    // A READ spanning two chunks is copied out of them into the FUSE
    // thread's read buffer.
    std::shared_ptr<char[]> buf = read_buffer(size);
    ssize_t got = fs.engine->chunks()->read(id, off, size, buf.get());
    if (got < 0) return reply_error(req, static_cast<int>(got));
    count(static_cast<size_t>(got));
    fuse_reply_buf(req, buf.get(), static_cast<size_t>(got));
}

} // namespace clairfs::fuse
