// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

#include <sys/stat.h>

namespace clairfs::fuse {

void fuse_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (control_opendir(req, ino, fi)) return;
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    if (!S_ISDIR(n->mode)) return reply_error(req, -ENOTDIR);
    if (n->scan_errno) return reply_error(req, -n->scan_errno);
    // Listings never change, so the kernel may keep them across opendirs.
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

} // namespace clairfs::fuse
