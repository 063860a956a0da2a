// SPDX-License-Identifier: MIT
#include "clairfs/cache/backing_store.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <new>
#include <string>
#include <sys/stat.h>

namespace clairfs::cache {
namespace {

// O_NOATIME spares the shared file system an inode write per sample; only
// the owner or root may ask for it.
int open_backing(int backing_fd, const std::string& path) {
    int fd = sys::open_beneath(backing_fd, path.c_str(), O_RDONLY | O_NOATIME);
    if (fd == -EPERM) fd = sys::open_beneath(backing_fd, path.c_str(), O_RDONLY);
    return fd;
}

bool unchanged(const index::Node& n, const struct stat& st) {
    return static_cast<uint64_t>(st.st_size) == n.size && st.st_mtim.tv_sec == n.mtime_sec &&
           static_cast<uint32_t>(st.st_mtim.tv_nsec) == n.mtime_nsec;
}

} // namespace

BackingStore::BackingStore(const index::Index& idx, int backing_fd)
    : index_(idx), backing_fd_(backing_fd) {}

int BackingStore::open_verified(const index::Node& n) {
    // Reused per thread: fetch threads open thousands of files a second.
    thread_local std::string path;
    index_.relative_path(index_.id_of(n), path);
    int fd = open_backing(backing_fd_, path);
    if (fd < 0) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("%s: cannot open on the backing store: %s", path.c_str(), sys::error_text(fd));
        return fd;
    }
    struct stat st;
    if (int rv = sys::fstat(fd, &st); rv < 0) {
        sys::close(fd);
        errors_.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("%s: cannot stat on the backing store: %s", path.c_str(), sys::error_text(rv));
        return rv;
    }
    // The view is a snapshot: a file whose size or mtime moved since the
    // scan would mix old metadata with new bytes, so it is refused instead.
    if (!unchanged(n, st)) {
        sys::close(fd);
        stale_.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("%s changed on the backing store since the mount scan (size %llu -> %lld, "
                 "mtime %lld.%09u -> %lld.%09ld); refusing it with ESTALE, remount to see "
                 "the new version",
                 path.c_str(), static_cast<unsigned long long>(n.size),
                 static_cast<long long>(st.st_size), static_cast<long long>(n.mtime_sec),
                 n.mtime_nsec, static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
        return -ESTALE;
    }
    return fd;
}

ssize_t BackingStore::read_at(int fd, char* buf, size_t size, off_t off) {
    ssize_t got = sys::pread_full(fd, buf, size, off);
    if (got < 0) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("backing store read of %zu bytes at offset %lld failed: %s", size,
                 static_cast<long long>(off), sys::error_text(static_cast<int>(got)));
        return got;
    }
    reads_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(static_cast<uint64_t>(got), std::memory_order_relaxed);
    return got;
}

int BackingStore::read_whole(index::NodeId id, BlobRef& out) {
    int rv = read_range(id, 0, index_.node(id).size, out);
    if (rv == 0) files_.fetch_add(1, std::memory_order_relaxed);
    return rv;
}

int BackingStore::read_range(index::NodeId id, uint64_t off, uint64_t len, BlobRef& out) {
    const index::Node& n = index_.node(id);
    int fd = open_verified(n);
    if (fd < 0) return fd;

    std::shared_ptr<Blob> blob;
    try {
        blob = Blob::make(len);
    } catch (const std::bad_alloc&) {
        // A fetch thread must answer, not die: the demand waiting on it
        // gets an error it can pass to the reader.
        sys::close(fd);
        errors_.fetch_add(1, std::memory_order_relaxed);
        LOG_WARN("no memory for %llu bytes of node %u", static_cast<unsigned long long>(len), id);
        return -ENOMEM;
    }

    // A chunk is one read of exactly its bytes: the kernel's readahead on a
    // fresh descriptor would read past it into pages the DONTNEED below
    // leaves behind and memory pressure drops before the next chunk's read
    // (measured: 3% more bytes from the shared file system than the
    // dataset, bench/RESULTS.md "TFRecord shards").
    if (len < n.size) sys::fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    int rv = len > 0 ? read_exactly(fd, id, off, len, *blob) : 0;
    // The tiers now hold the bytes: the backing file's pages would be a
    // second copy charged to the same memory budget (the job's cgroup, on
    // a node), and reclaiming them later costs the job's own allocations.
    // Advice only: a failure changes nothing that is served.
    if (rv == 0 && len > 0)
        sys::fadvise(fd, static_cast<off_t>(off), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
    sys::close(fd);
    if (rv < 0) return rv;
    out = std::move(blob);
    return 0;
}

int BackingStore::read_exactly(int fd, index::NodeId id, uint64_t off, uint64_t len, Blob& blob) {
    // pread_full loops on short reads; fewer bytes than asked means EOF.
    ssize_t got = read_at(fd, blob.bytes.get(), len, static_cast<off_t>(off));
    if (got < 0) return static_cast<int>(got);
    if (static_cast<uint64_t>(got) >= len) return 0;
    // fstat agreed with the scan, so the file shrank under us (or the file
    // system lies about sizes): the bytes are not the scan's.
    stale_.fetch_add(1, std::memory_order_relaxed);
    std::string path;
    index_.relative_path(id, path);
    LOG_WARN("%s ended at byte %lld although the mount scan saw %llu bytes; refusing "
             "it with ESTALE, remount to see the new version",
             path.c_str(), static_cast<long long>(off) + got,
             static_cast<unsigned long long>(index_.node(id).size));
    return -ESTALE;
}

BackingStats BackingStore::stats() const {
    BackingStats s;
    s.reads = reads_.load(std::memory_order_relaxed);
    s.bytes = bytes_.load(std::memory_order_relaxed);
    s.files = files_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.stale = stale_.load(std::memory_order_relaxed);
    return s;
}

} // namespace clairfs::cache
