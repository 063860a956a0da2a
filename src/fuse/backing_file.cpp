// SPDX-License-Identifier: MIT
#include "backing_file.hpp"

#include "clairfs/sys/syscalls.hpp"

namespace clairfs::fuse {

int backing_fd(Filesystem& fs, OpenFile& of, const index::Node& n) {
    int fd = of.fd.load(std::memory_order_acquire);
    if (fd >= 0) return fd;
    fd = fs.engine->backing().open_verified(n);
    if (fd < 0) return fd;
    int expected = -1;
    if (of.fd.compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) return fd;
    sys::close(fd);
    return expected;
}

int file_bytes(Filesystem& fs, OpenFile* of, index::NodeId id, cache::BlobRef& out) {
    if (of) {
        std::lock_guard lk(of->mu);
        if (of->blob) {
            out = of->blob;
            return 0;
        }
    }
    if (int rv = fs.engine->bytes_of(id, out); rv < 0) return rv;
    if (of) {
        std::lock_guard lk(of->mu);
        of->blob = out;
    }
    return 0;
}

} // namespace clairfs::fuse
