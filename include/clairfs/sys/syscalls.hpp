// SPDX-License-Identifier: MIT
// Thin syscall wrappers. Every one returns a non-negative result or -errno,
// so the whole code base has one error convention and no errno races.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

namespace clairfs::sys {

inline int neg_errno(long rv) {
    return rv < 0 ? -errno : static_cast<int>(rv);
}

inline int openat(int dirfd, const char* path, int flags) {
    return neg_errno(::openat(dirfd, path, flags | O_CLOEXEC));
}

// Opens `path` strictly beneath `dirfd`, refusing symlinks and ".." escapes,
// so that a tree swapped under the mount can never make us read outside it.
int open_beneath(int dirfd, const char* path, int flags);

inline int close(int fd) {
    return neg_errno(::close(fd));
}

inline ssize_t pread(int fd, void* buf, size_t count, off_t offset) {
    for (;;) {
        ssize_t rv = ::pread(fd, buf, count, offset);
        if (rv >= 0) return rv;
        if (errno != EINTR) return -errno;
    }
}

// Reads until `count` bytes or end of file; a short result means EOF.
inline ssize_t pread_full(int fd, void* buf, size_t count, off_t offset) {
    size_t done = 0;
    while (done < count) {
        ssize_t rv = pread(fd, static_cast<char*>(buf) + done, count - done,
                           offset + static_cast<off_t>(done));
        if (rv < 0) return rv;
        if (rv == 0) break;
        done += static_cast<size_t>(rv);
    }
    return static_cast<ssize_t>(done);
}

// Writes all `count` bytes, after EINTR and short writes alike: 0 or -errno
// (-EIO for a write that took nothing, which would otherwise loop for ever).
inline int write_full(int fd, const void* buf, size_t count) {
    const char* p = static_cast<const char*>(buf);
    while (count > 0) {
        ssize_t rv = ::write(fd, p, count);
        if (rv < 0 && errno == EINTR) continue;
        if (rv < 0) return -errno;
        if (rv == 0) return -EIO;
        p += rv;
        count -= static_cast<size_t>(rv);
    }
    return 0;
}

// posix_fadvise returns the error instead of setting errno.
inline int fadvise(int fd, off_t offset, off_t len, int advice) {
    return -::posix_fadvise(fd, offset, len, advice);
}

inline int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
    return neg_errno(::fstatat(dirfd, path, st, flags));
}

inline int fstat(int fd, struct stat* st) {
    return neg_errno(::fstat(fd, st));
}

// Whether every page of the file's first `size` bytes is in the page
// cache: 1 yes, 0 no, or -errno. cachestat(2) (Linux 6.5), else mincore
// over a mapping.
int all_pages_cached(int fd, uint64_t size);
// The same by mincore(2) alone: what all_pages_cached() falls back to on
// kernels before 6.5 (public so that a test reaches it here).
int all_pages_cached_by_mincore(int fd, uint64_t size);

// The soft RLIMIT_NOFILE raised to the hard one, and returned: a daemon
// keeping many files open needs more than the 1024 a login shell gives,
// and the hard limit is the administrator's bound, not this process's.
uint64_t raise_open_files_limit();

// Reads a symlink target of any length into `out`.
int readlinkat(int dirfd, const char* path, std::string& out);

// Text for -errno values, like strerror but taking our sign convention.
const char* error_text(int neg_err);

} // namespace clairfs::sys
