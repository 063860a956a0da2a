// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"

namespace clairfs::fuse {

// Inodes are positions in the immutable index and live as long as the
// mount, so the kernel's lookup counts need no bookkeeping.
void fuse_forget(fuse_req_t req, fuse_ino_t, uint64_t) {
    fuse_reply_none(req);
}

void fuse_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) {
    fuse_reply_none(req);
}

} // namespace clairfs::fuse
