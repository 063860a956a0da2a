// SPDX-License-Identifier: MIT
#include "clairfs/sys/syscalls.hpp"

#include <atomic>
#include <cstring>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

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

namespace {

// linux/mman.h's, which Debian 12's kernel headers (6.1) predate.
struct CachestatRange {
    uint64_t off, len;
};
struct Cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
#ifdef __NR_cachestat
constexpr long sys_cachestat = __NR_cachestat;
#else
constexpr long sys_cachestat = 451; // the generic table's and x86-64's
#endif

} // namespace

int all_pages_cached_by_mincore(int fd, uint64_t size) {
    if (size == 0) return 1;
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return -errno;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((size + page - 1) / page);
    int rv = ::mincore(map, size, vec.data()) == 0 ? 1 : -errno;
    ::munmap(map, size);
    for (unsigned char v : vec)
        if (rv == 1 && !(v & 1)) rv = 0;
    return rv;
}

int all_pages_cached(int fd, uint64_t size) {
    if (size == 0) return 1;
    static std::atomic<bool> have_cachestat{true};
    if (have_cachestat.load(std::memory_order_relaxed)) {
        CachestatRange range{0, size};
        Cachestat cs{};
        if (::syscall(sys_cachestat, fd, &range, &cs, 0) == 0) {
            const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
            return cs.nr_cache >= (size + page - 1) / page ? 1 : 0;
        }
        if (errno != ENOSYS) return -errno;
        have_cachestat.store(false, std::memory_order_relaxed);
    }
    return all_pages_cached_by_mincore(fd, size);
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

uint64_t raise_open_files_limit() {
    struct rlimit r {};
    if (::getrlimit(RLIMIT_NOFILE, &r) < 0) return 1024;
    if (r.rlim_cur < r.rlim_max) {
        struct rlimit up = r;
        up.rlim_cur = r.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &up) == 0) r = up;
    }
    return r.rlim_cur == RLIM_INFINITY ? uint64_t{1} << 20 : r.rlim_cur;
}

} // namespace clairfs::sys
