// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

#include <algorithm>
#include <memory>

namespace clairfs::fuse {
namespace {

// One buffer per FUSE worker thread, grown to the largest request seen
// (bounded by max_read), so the hot path never allocates.
char* read_buffer(size_t size) {
    thread_local std::unique_ptr<char[]> buf;
    thread_local size_t capacity = 0;
    if (size > capacity) {
        buf = std::make_unique_for_overwrite<char[]>(size);
        capacity = size;
    }
    return buf.get();
}

void count(Filesystem& fs, size_t bytes) {
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// A file too large for the tiers (or --mem 0) is read range by range.
void read_through(fuse_req_t req, Filesystem& fs, const index::Node& n, OpenFile* of, size_t size,
                  off_t off) {
    // With --kernel-opens there is no OpenFile: each READ opens for itself.
    int fd = of ? backing_fd(fs, *of, n) : fs.engine->backing().open_verified(n);
    if (fd < 0) return reply_error(req, fd);
    char* buf = read_buffer(size);
    ssize_t got = fs.engine->backing().read_at(fd, buf, size, off);
    if (!of) sys::close(fd);
    if (got < 0) return reply_error(req, static_cast<int>(got));
    count(fs, static_cast<size_t>(got));
    fuse_reply_buf(req, buf, static_cast<size_t>(got));
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
    cache::BlobRef blob;
    // --kernel-opens: no OPEN reaches us, so a file's first READ stands for
    // its open (the engine drops files' pages after use while a job is
    // registered, so every open of a sample comes with a READ at 0).
    if (off_u == 0 && fs.options.kernel_opens) {
        blob = fs.engine->opened(id, static_cast<uint32_t>(fuse_req_ctx(req)->pid));
    }
    if (!fs.engine->tiered(*n)) return read_through(req, fs, *n, of, size, off);

    if (!blob) {
        if (int rv = file_bytes(fs, of, id, blob); rv < 0) return reply_error(req, rv);
    }
    count(fs, size);
    // The blob is the whole file, verified to be the scanned size.
    fuse_reply_buf(req, blob->bytes.get() + off_u, size);
}

} // namespace clairfs::fuse
