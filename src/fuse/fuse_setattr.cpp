// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

// Truncating .clairfs/control is the only change of attributes allowed;
// modes, owners, sizes and times of the dataset are the snapshot's.
void fuse_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
    if (control_setattr(req, ino, attr, to_set)) return;
    reply_error(req, -EROFS);
}

} // namespace clairfs::fuse
