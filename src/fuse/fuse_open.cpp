// SPDX-License-Identifier: MIT
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "fuse_ops.hpp"

#include <string>
#include <sys/stat.h>

namespace clairfs::fuse {
namespace {

// Opens the backing file for reading. O_NOATIME spares the shared file
// system an inode write per sample; only the owner or root may ask for it.
int open_backing(const Filesystem& fs, index::NodeId id) {
    thread_local std::string path;
    fs.index.relative_path(id, path);
    int fd = sys::open_beneath(fs.backing_fd, path.c_str(), O_RDONLY | O_NOATIME);
    if (fd == -EPERM) fd = sys::open_beneath(fs.backing_fd, path.c_str(), O_RDONLY);
    return fd;
}

// The view is a snapshot: a file whose size or mtime moved since the scan
// would mix old metadata with new bytes, so it is refused instead.
int check_unchanged(Filesystem& fs, const index::Node& n, int fd) {
    struct stat st;
    if (int rv = sys::fstat(fd, &st); rv < 0) return rv;
    if (static_cast<uint64_t>(st.st_size) == n.size && st.st_mtim.tv_sec == n.mtime_sec &&
        static_cast<uint32_t>(st.st_mtim.tv_nsec) == n.mtime_nsec)
        return 0;
    fs.counters.stale_files.fetch_add(1, std::memory_order_relaxed);
    std::string path;
    fs.index.relative_path(fs.index.id_of(n), path);
    LOG_WARN("%s changed on the backing store since the mount scan (size %llu -> %lld); "
             "refusing it with ESTALE, remount to see the new version",
             path.c_str(), static_cast<unsigned long long>(n.size),
             static_cast<long long>(st.st_size));
    return -ESTALE;
}

int open_checked(Filesystem& fs, const index::Node& n) {
    int fd = open_backing(fs, fs.index.id_of(n));
    if (fd < 0) return fd;
    if (int rv = check_unchanged(fs, n, fd); rv < 0) {
        sys::close(fd);
        return rv;
    }
    return fd;
}

} // namespace

void fuse_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return reply_error(req, -EROFS);
    if (!S_ISREG(n->mode)) return reply_error(req, S_ISDIR(n->mode) ? -EISDIR : -EINVAL);

    int fd = open_checked(fs, *n);
    if (fd < 0) {
        if (fd != -ESTALE) fs.counters.backing_errors.fetch_add(1, std::memory_order_relaxed);
        LOG_DEBUG("open ino %llu: %s", static_cast<unsigned long long>(ino), sys::error_text(fd));
        return reply_error(req, fd);
    }
    fs.counters.opens.fetch_add(1, std::memory_order_relaxed);
    fi->fh = static_cast<uint64_t>(fd);
    fi->keep_cache = 1; // the bytes cannot change while mounted
    fi->noflush = 1;
    if (fuse_reply_open(req, fi) != 0) sys::close(fd); // the opener was interrupted
}

} // namespace clairfs::fuse
