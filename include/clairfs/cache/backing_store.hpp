// SPDX-License-Identifier: MIT
// The shared file system behind the mount, as the daemon reads it: every
// open is checked against the scan (a file that changed since is refused
// with ESTALE rather than mixing old metadata with new bytes), and every
// request it serves is counted, so status can say what the shared file
// system was spared.
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/index/index.hpp"

#include <atomic>
#include <cstdint>
#include <sys/types.h>

namespace clairfs::cache {

struct BackingStats {
    uint64_t reads = 0;  // read requests issued (pread calls that returned data or EOF)
    uint64_t bytes = 0;  // bytes they returned
    uint64_t files = 0;  // whole-file reads (read_whole) that succeeded
    uint64_t errors = 0; // opens or reads the backing store refused (not ESTALE)
    uint64_t stale = 0;  // files found changed since the scan
};

class BackingStore {
public:
    // `backing_fd` is the O_DIRECTORY descriptor of the backing root; both
    // must outlive the store.
    BackingStore(const index::Index& idx, int backing_fd);

    // Opens the file behind `n` read-only (O_NOATIME where allowed, never
    // leaving the backing tree) and checks its size and mtime against the
    // scan. Returns the descriptor, -ESTALE if it changed (logged once per
    // call with the path), or the open's -errno (-ENOENT if it vanished).
    int open_verified(const index::Node& n);

    // pread until `size` bytes or EOF, retrying EINTR; counts the request.
    // Returns the bytes read or -errno (logged, counted as an error).
    ssize_t read_at(int fd, char* buf, size_t size, off_t off);

    // The whole file `id` in one read (more only if the file system returns
    // short reads): open_verified, read, close. A file shorter on disk than
    // the scan said is -ESTALE. 0 on success, else -errno and `out` is untouched.
    int read_whole(index::NodeId id, BlobRef& out);
    // Bytes [off, off + len) of file `id`, all within its scanned size (a
    // large file's chunk), likewise verified at the open; not counted in
    // `files`.
    int read_range(index::NodeId id, uint64_t off, uint64_t len, BlobRef& out);

    BackingStats stats() const;

private:
    // Exactly `len` bytes at `off` into `blob`: 0, the read's -errno, or
    // -ESTALE (logged) if the file ends before them.
    int read_exactly(int fd, index::NodeId id, uint64_t off, uint64_t len, Blob& blob);

    const index::Index& index_;
    int backing_fd_;
    std::atomic<uint64_t> reads_{0}, bytes_{0}, files_{0}, errors_{0}, stale_{0};
};

} // namespace clairfs::cache
