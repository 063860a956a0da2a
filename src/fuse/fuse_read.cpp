// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "chunk_read.hpp"
#include "control_nodes.hpp"
#include "fuse_ops.hpp"
#include "read_through.hpp"

#include <algorithm>

namespace clairfs::fuse {
namespace {

void count(Filesystem& fs, size_t bytes) {
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// What a READ tells the engine besides asking for bytes. --kernel-opens:
// no OPEN reaches us, so a file's first READ stands for its open (the
// engine drops files' pages after use while a job is registered, so every
// open of a sample comes with a READ at 0); the bytes opened() pinned, if
// a tier holds them. --opens fanotify: opens are told apart; a READ at 0
// without an open of ours says the kernel lacked the file's first page.
// And a job whose samples are byte ranges of this file is followed by its
// READs.
cache::BlobRef tell_engine(fuse_req_t req, Filesystem& fs, const OpenFile* of, index::NodeId id,
                           uint64_t off, size_t size) {
    const auto pid = static_cast<uint32_t>(fuse_req_ctx(req)->pid);
    cache::BlobRef blob;
    if (off == 0 && fs.options.fast_path.kernel_opens)
        blob = fs.engine->opened(id, pid);
    else if (off == 0 && !of && fs.open_watch)
        fs.engine->read_from_start(id);
    fs.engine->read_range(id, off, size, pid);
    return blob;
}

} // namespace

void fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    if (control_read(req, ino, size, off, fi)) return;
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -EBADF);
    // The kernel rounds requests up to whole pages; clamping to the indexed
    // size (which every backing open verifies) saves a request that only
    // finds EOF.
    auto off_u = static_cast<uint64_t>(off);
    size = off_u >= n->size ? 0 : static_cast<size_t>(std::min<uint64_t>(size, n->size - off_u));
    if (size == 0) return static_cast<void>(fuse_reply_buf(req, nullptr, 0));
    auto* of = reinterpret_cast<OpenFile*>(fi->fh);
    index::NodeId id = fs.index.id_of(*n);
    cache::BlobRef blob = tell_engine(req, fs, of, id, off_u, size);
    switch (fs.engine->source(*n)) {
    case prefetch::ReadSource::chunks:
        return chunk_read(req, fs, id, size, off_u);
    case prefetch::ReadSource::backing:
    case prefetch::ReadSource::passthrough: // this kernel could not, or a READ without an OPEN
        return read_through(req, fs, *n, of, size, off);
    case prefetch::ReadSource::tiers:
        break;
    }

    if (!blob) {
        if (int rv = file_bytes(fs, of, id, blob); rv < 0) return reply_error(req, rv);
    }
    count(fs, size);
    if (of) of->served.fetch_add(size, std::memory_order_relaxed);
    // The blob is the whole file, verified to be the scanned size.
    fuse_reply_buf(req, blob->bytes.get() + off_u, size);
}

} // namespace clairfs::fuse
