// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"

#include <string>
#include <sys/stat.h>

namespace clairfs::fuse {

void fuse_readlink(fuse_req_t req, fuse_ino_t ino) {
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    if (!S_ISLNK(n->mode)) return reply_error(req, -EINVAL);
    std::string target(fs.index.link_target(*n)); // FUSE wants it NUL-terminated
    fuse_reply_readlink(req, target.c_str());
}

} // namespace clairfs::fuse
