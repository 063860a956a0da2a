// SPDX-License-Identifier: MIT
// Bringing the SSD tier up: the cache directory, the reserve (created
// 0600, locked against a second mount, preallocated once the entries kept
// are known, so a full disk shows now and not in the middle of a write),
// the entries' directory (0700) and their devices. Every failure here
// gives a disabled tier with a one-line reason; the mount goes on without it.
#include "aio_file.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

namespace clairfs::cache {
namespace {

// The same dataset must give the same name whichever way it was spelled.
std::string absolute_root(const std::string& root) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(root, ec);
    std::string out = (ec ? std::filesystem::path(root) : p).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

// Closes a descriptor on every early return until it is handed on.
struct FdGuard {
    int fd = -1;
    ~FdGuard() {
        if (fd >= 0) sys::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

int open_cache(int dir_fd, const std::string& name, bool direct) {
    int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (direct ? O_DIRECT : 0);
    return sys::neg_errno(::openat(dir_fd, name.c_str(), flags, 0600));
}

// A second mount of the same dataset with the same cache dir would write
// over this one's extents.
int lock_cache(int fd) {
    int rv;
    do {
        rv = sys::neg_errno(::flock(fd, LOCK_EX | LOCK_NB));
    } while (rv == -EINTR);
    return rv;
}

// Some file systems accept O_DIRECT at open and refuse it at the first
// transfer; one block read now tells.
int probe_direct(int fd) {
    void* p = std::aligned_alloc(Blob::alignment, Blob::alignment);
    if (!p) return -ENOMEM;
    int rv = static_cast<int>(sys::pread(fd, p, Blob::alignment, 0));
    std::free(p);
    return rv < 0 ? rv : 0;
}

// The cache file while the tier comes up: found or created, locked,
// preallocated, and opened for O_DIRECT where the file system takes it.
// Each step returns "" or the reason the tier stays off.
struct CacheFile {
    int dir_fd;
    const std::string& name; // in the directory of dir_fd
    std::string path;        // for messages
    FdGuard fd{};
    bool direct = true;
    bool existed = false;
    uint64_t old_size = 0;

    std::string open() {
        struct stat st;
        existed = sys::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        old_size = existed ? static_cast<uint64_t>(st.st_size) : 0;
        direct = true;
        fd.fd = open_cache(dir_fd, name, true);
        if (fd.fd == -EINVAL) {
            fd.fd = open_cache(dir_fd, name, false);
            direct = false;
        }
        if (fd.fd < 0) return "cannot open " + path + ": " + sys::error_text(fd.release());
        if (int rv = lock_cache(fd.fd); rv < 0)
            return path + (rv == -EWOULDBLOCK ? " is in use by another clairfs mount"
                                              : std::string(": cannot lock: ") +
                                                    sys::error_text(rv));
        if (sys::fstat(fd.fd, &st) < 0 || !S_ISREG(st.st_mode))
            return path + " is not a regular file";
        ::fchmod(fd.fd, 0600);
        return "";
    }

    // Sized to --ssd, sparse: reserve_room() allocates what the entries
    // do not take once they are known.
    std::string size_to(uint64_t capacity) {
        if (int rv = sys::neg_errno(::ftruncate(fd.fd, static_cast<off_t>(capacity))); rv < 0)
            return "cannot size " + path + ": " + sys::error_text(rv);
        return "";
    }

    // Opened with O_DIRECT but refused at the first transfer: buffered.
    std::string settle_direct() {
        if (!direct || probe_direct(fd.fd) != -EINVAL) return "";
        sys::close(fd.release());
        fd.fd = open_cache(dir_fd, name, false);
        direct = false;
        if (fd.fd < 0) return "cannot open " + path + ": " + sys::error_text(fd.release());
        if (int rv = lock_cache(fd.fd); rv < 0)
            return path + ": cannot lock: " + sys::error_text(rv);
        return "";
    }
};

} // namespace

std::string cache_file_stem(const std::string& dataset) {
    std::string root = absolute_root(dataset);
    char stem[40];
    std::snprintf(stem, sizeof(stem), "clairfs-%016" PRIx64, XXH3_64bits(root.data(), root.size()));
    return stem;
}

SsdTier::Core::Core(const SsdOptions& o)
    : describe(o.describe), place(o.place), nodes(o.nodes), max_io_errors(o.max_io_errors ? o.max_io_errors : 1),
      dir(o.dir), check_once(o.check_once), max_open_files(o.open_files) {
    if (nodes) resident = std::make_unique<std::atomic<uint8_t>[]>(nodes);
}

SsdTier::Core::~Core() {
    if (entries_fd >= 0) sys::close(entries_fd);
    if (lock_fd >= 0) sys::close(lock_fd);
    if (dir_fd >= 0) sys::close(dir_fd);
}

std::string SsdTier::Core::open_files(const SsdOptions& o, bool& existed) {
    const std::string off = "ssd tier disabled: ";
    uint64_t capacity = o.capacity & ~(Blob::alignment - 1);
    if (!describe) return off + "no file table was given";
    if (capacity == 0)
        return off + "--ssd " + std::to_string(o.capacity) + " bytes is less than one 4 KiB block";
    int dfd = sys::neg_errno(::open(o.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd < 0) return off + "cannot open cache dir " + o.dir + ": " + sys::error_text(dfd);
    dir_fd = dfd;
    name_files(o.dataset);

    CacheFile file{dir_fd, cache_name, dir + "/" + cache_name};
    std::string why = file.open();
    existed = file.existed;
    reserve_existed = existed;
    if (why.empty()) why = file.size_to(capacity);
    if (why.empty()) why = file.settle_direct();
    if (why.empty()) why = open_entries_dir();
    direct = file.direct;
    if (!why.empty()) {
        if (!existed && file.fd.fd >= 0) ::unlinkat(dir_fd, cache_name.c_str(), 0);
        return off + why;
    }
    if (!direct)
        LOG_WARN("ssd tier: %s does not support O_DIRECT; using buffered I/O with "
                 "POSIX_FADV_DONTNEED, so the cache's files compete with the page cache",
                 dir.c_str());
    attach_device(o, file.fd.release(), capacity);
    return "";
}

void SsdTier::Core::name_files(const std::string& dataset) {
    std::string root = absolute_root(dataset);
    dataset_tag = XXH3_64bits(root.data(), root.size());
    std::string stem = cache_file_stem(dataset);
    cache_name = stem + ".cache";
    journal_name = stem + ".journal";
    entries_name = stem + ".cache.d";
}

std::string SsdTier::Core::open_entries_dir() {
    const std::string path = dir + "/" + entries_name;
    int rv = sys::neg_errno(::mkdirat(dir_fd, entries_name.c_str(), 0700));
    if (rv < 0 && rv != -EEXIST) return "cannot create " + path + ": " + sys::error_text(rv);
    int fd = sys::neg_errno(
        ::openat(dir_fd, entries_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0) return "cannot open " + path + ": " + sys::error_text(fd);
    ::fchmod(fd, 0700);
    entries_fd = fd;
    return "";
}

std::unique_ptr<BlockDevice> SsdTier::Core::device_for(int fd, bool warm) {
    // An entry's file is exactly the file's size: its last block is read
    // short, which is its end, not an error.
    std::unique_ptr<BlockDevice> dev =
        std::make_unique<AioFile>(fd, direct && !warm, stall, /*to_eof=*/true, /*keep_pages=*/warm);
    return wrap_device ? wrap_device(std::move(dev)) : std::move(dev);
}

void SsdTier::Core::attach_device(const SsdOptions& o, int fd, uint64_t capacity) {
    stall.after = o.io_timeout;
    char bound[32];
    std::snprintf(bound, sizeof bound, "%.1f s", static_cast<double>(o.io_timeout.count()) / 1000);
    stall.stalled = [this, bound = std::string(bound)] {
        disable("ssd tier disabled: a request to a file in " + dir + "/" + entries_name +
                " has not completed in " + bound +
                " (--io-timeout); reads go to the backing store");
    };
    lock_fd = fd;
    wrap_device = o.wrap_device;
    extents = ExtentAllocator(capacity);
    stats.capacity = capacity;
}

SsdTier::SsdTier(std::unique_ptr<Core> core) : core_(std::move(core)) {}

SsdTier::~SsdTier() {
    core_->close();
}

std::unique_ptr<SsdTier> SsdTier::open(const SsdOptions& options) {
    auto core = std::make_unique<Core>(options);
    bool existed = false;
    std::string reason = core->open_files(options, existed);
    if (reason.empty()) {
        core->enabled.store(true);
        core->restart_warm(existed);
        reason = core->reserve_room();
        if (!reason.empty()) core->disable(reason);
    } else {
        core->counters.error = reason;
        core->stats.capacity = 0;
        LOG_ERROR("%s", reason.c_str());
    }
    return std::unique_ptr<SsdTier>(new SsdTier(std::move(core)));
}

} // namespace clairfs::cache
