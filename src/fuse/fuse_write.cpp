// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

// Only .clairfs/control is writable; the dataset cannot even be opened for
// writing (fuse_open), so this answer is a backstop, except where the
// kernel opens files itself (--opens fanotify): there the refused bytes
// may already sit in the file's cached pages, which the open watch drops.
void fuse_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                fuse_file_info* fi) {
    if (control_write(req, ino, buf, size, off, fi)) return;
    OpenWatch* watch = filesystem_of(req).open_watch; // the reply frees req
    reply_error(req, -EROFS);
    if (watch) watch->refused_write(ino);
}

} // namespace clairfs::fuse
