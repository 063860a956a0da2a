// SPDX-License-Identifier: MIT
#include "backing_file.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <string>
#include <sys/stat.h>

namespace clairfs::fuse {
namespace {

// O_NOATIME spares the shared file system an inode write per sample; only
// the owner or root may ask for it.
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

} // namespace

int open_verified(Filesystem& fs, const index::Node& n) {
    int fd = open_backing(fs, fs.index.id_of(n));
    if (fd >= 0) {
        if (int rv = check_unchanged(fs, n, fd); rv < 0) {
            sys::close(fd);
            fd = rv;
        }
    }
    if (fd < 0 && fd != -ESTALE) fs.counters.backing_errors.fetch_add(1, std::memory_order_relaxed);
    return fd;
}

int backing_fd(Filesystem& fs, OpenFile& of, const index::Node& n) {
    int fd = of.fd.load(std::memory_order_acquire);
    if (fd >= 0) return fd;
    fd = open_verified(fs, n);
    if (fd < 0) return fd;
    int expected = -1;
    if (of.fd.compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) return fd;
    sys::close(fd);
    return expected;
}

} // namespace clairfs::fuse
