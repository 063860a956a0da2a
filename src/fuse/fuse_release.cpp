// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (control_release(req, ino, fi)) return;
    auto* of = reinterpret_cast<OpenFile*>(fi->fh);
    if (of) {
        if (int fd = of->fd.load(std::memory_order_acquire); fd >= 0) sys::close(fd);
        uint64_t served = of->served.load(std::memory_order_relaxed);
        prefetch::OpenPush push = of->push;
        delete of; // its reference to the bytes first, so a hand-over frees them
        Filesystem& fs = filesystem_of(req);
        if (const index::Node* n = node_of(fs, ino); n && (served > 0 || push != prefetch::OpenPush::none))
            fs.engine->released(fs.index.id_of(*n), served, push);
    }
    fuse_reply_err(req, 0);
}

} // namespace clairfs::fuse
