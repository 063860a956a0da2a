// SPDX-License-Identifier: MIT
#include "clairfs/sys/syscalls.hpp"

#include <cstring>
#include <linux/openat2.h>
#include <sys/syscall.h>

namespace clairfs::sys {

int open_beneath(int dirfd, const char* path, int flags) {
    struct open_how how {};
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long rv = ::syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (rv >= 0 || errno != ENOSYS) return neg_errno(rv);
    // Kernels before 5.6 lack openat2; O_NOFOLLOW still guards the last
    // component, and the scan already rejected symlinks that escape.
    return openat(dirfd, path, flags | O_NOFOLLOW);
}

int readlinkat(int dirfd, const char* path, std::string& out) {
    std::string buf(256, '\0');
    for (;;) {
        ssize_t n = ::readlinkat(dirfd, path, buf.data(), buf.size());
        if (n < 0) return -errno;
        if (static_cast<size_t>(n) < buf.size()) {
            buf.resize(static_cast<size_t>(n));
            out = std::move(buf);
            return 0;
        }
        buf.resize(buf.size() * 2);
    }
}

const char* error_text(int neg_err) {
    return std::strerror(neg_err < 0 ? -neg_err : neg_err);
}

} // namespace clairfs::sys
