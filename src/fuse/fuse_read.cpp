// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
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

} // namespace

void fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -EBADF);
    // The kernel rounds requests up to whole pages; clamping to the indexed
    // size (which the backing open verifies) saves a pread that only finds EOF.
    auto off_u = static_cast<uint64_t>(off);
    size = off_u >= n->size ? 0 : static_cast<size_t>(std::min<uint64_t>(size, n->size - off_u));
    if (size == 0) return static_cast<void>(fuse_reply_buf(req, nullptr, 0));
    // With --kernel-opens there is no OpenFile: each READ opens for itself.
    auto* of = reinterpret_cast<OpenFile*>(fi->fh);
    int fd = of ? backing_fd(fs, *of, *n) : open_verified(fs, *n);
    if (fd < 0) return reply_error(req, fd);
    char* buf = read_buffer(size);
    ssize_t got = sys::pread_full(fd, buf, size, off);
    if (!of) sys::close(fd);
    if (got < 0) {
        fs.counters.backing_errors.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("read ino %llu at %lld: %s", static_cast<unsigned long long>(ino),
                 static_cast<long long>(off), sys::error_text(static_cast<int>(got)));
        return reply_error(req, static_cast<int>(got));
    }
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(static_cast<uint64_t>(got), std::memory_order_relaxed);
    fuse_reply_buf(req, buf, static_cast<size_t>(got));
}

} // namespace clairfs::fuse
