// SPDX-License-Identifier: MIT
#include "clairfs/sys/syscalls.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    sys::close(static_cast<int>(fi->fh));
    fuse_reply_err(req, 0);
}

} // namespace clairfs::fuse
