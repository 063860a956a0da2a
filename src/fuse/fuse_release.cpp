// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (control_release(req, ino, fi)) return;
    auto* of = reinterpret_cast<OpenFile*>(fi->fh);
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    // Before the reply: closing a backing id needs the request's session.
    if (of && of->backing_id && n) fs.passthrough.release(req, fs.index.id_of(*n));
    if (of && of->tier_cached && n) fs.passthrough.cached_release(fs.index.id_of(*n));
    // The reply first: what released() does to the kernel's pages (a
    // hand-over's or --one-copy's drop) waits on their locks, and nothing
    // waits on a RELEASE's reply.
    if (of && n) fs.closed(fs.index.id_of(*n));
    fuse_reply_err(req, 0);
    if (!of) return;
    if (int fd = of->fd.load(std::memory_order_acquire); fd >= 0) sys::close(fd);
    uint64_t served = of->served.load(std::memory_order_relaxed);
    prefetch::OpenPush push = of->push;
    delete of; // its reference to the bytes first, so a hand-over frees them
    if (n) fs.engine->released(fs.index.id_of(*n), served, push);
}

} // namespace clairfs::fuse
