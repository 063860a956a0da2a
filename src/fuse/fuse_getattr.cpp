// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
    if (control_getattr(req, ino)) return;
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    struct stat st;
    fill_stat(fs, *n, st);
    fuse_reply_attr(req, &st, fs.options.cache_timeout);
}

} // namespace clairfs::fuse
