// SPDX-License-Identifier: MIT
#include "dir_listing.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

void fuse_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
    reply_listing(req, ino, size, off, true);
}

} // namespace clairfs::fuse
