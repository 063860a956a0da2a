// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"

#include <sys/stat.h>

namespace clairfs::fuse {

// Inodes are positions in the immutable index and live as long as the
// mount, so the kernel's lookup counts need no bookkeeping. The kernel
// forgets an inode only when it evicts it, and its cached pages go with
// it: a file handed over to the page cache is no longer there.
namespace {

void forget_one(Filesystem& fs, fuse_ino_t ino) {
    if (const index::Node* n = node_of(fs, ino); n && S_ISREG(n->mode))
        fs.engine->forgotten(fs.index.id_of(*n));
}

} // namespace

void fuse_forget(fuse_req_t req, fuse_ino_t ino, uint64_t) {
    forget_one(filesystem_of(req), ino);
    fuse_reply_none(req);
}

void fuse_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    Filesystem& fs = filesystem_of(req);
    for (size_t i = 0; i < count; ++i) forget_one(fs, forgets[i].ino);
    fuse_reply_none(req);
}

} // namespace clairfs::fuse
