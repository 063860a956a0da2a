// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

#include <cstring>
#include <sys/stat.h>

namespace clairfs::fuse {

void fuse_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    if (control_lookup(req, parent, name)) return;
    Filesystem& fs = filesystem_of(req);
    const index::Node* dir = node_of(fs, parent);
    if (!dir) return reply_error(req, -ENOENT);
    if (!S_ISDIR(dir->mode)) return reply_error(req, -ENOTDIR);
    if (dir->scan_errno) return reply_error(req, -dir->scan_errno);

    fuse_entry_param e;
    if (const index::Node* n = fs.index.lookup(*dir, name)) {
        fill_entry(fs, *n, e);
    } else {
        // A negative entry: the kernel remembers the miss for as long as it
        // remembers hits, so probing loaders do not ask again.
        std::memset(&e, 0, sizeof e);
        e.entry_timeout = fs.options.cache_timeout;
    }
    fuse_reply_entry(req, &e);
}

} // namespace clairfs::fuse
