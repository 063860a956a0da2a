// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    auto* of = reinterpret_cast<OpenFile*>(fi->fh);
    if (of) {
        if (int fd = of->fd.load(std::memory_order_acquire); fd >= 0) sys::close(fd);
        delete of;
    }
    fuse_reply_err(req, 0);
}

} // namespace clairfs::fuse
