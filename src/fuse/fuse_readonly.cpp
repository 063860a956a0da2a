// SPDX-License-Identifier: MIT
// Every operation that would change the tree. The mount is not read-only
// in the kernel (writes to .clairfs/control must reach us), so these
// handlers are what answers EROFS, never ENOSYS. write and setattr have
// their own files: they serve the control file.
#include "fuse_ops.hpp"

namespace clairfs::fuse {
namespace {

void refuse(fuse_req_t req) {
    reply_error(req, -EROFS);
}

} // namespace

void fill_readonly_operations(fuse_lowlevel_ops& ops) {
    ops.mknod = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { refuse(req); };
    ops.mkdir = [](fuse_req_t req, fuse_ino_t, const char*, mode_t) { refuse(req); };
    ops.unlink = [](fuse_req_t req, fuse_ino_t, const char*) { refuse(req); };
    ops.rmdir = [](fuse_req_t req, fuse_ino_t, const char*) { refuse(req); };
    ops.symlink = [](fuse_req_t req, const char*, fuse_ino_t, const char*) { refuse(req); };
    ops.rename = [](fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
        refuse(req);
    };
    ops.link = [](fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { refuse(req); };
    ops.create = [](fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) {
        refuse(req);
    };
    ops.setxattr = [](fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
        refuse(req);
    };
    ops.removexattr = [](fuse_req_t req, fuse_ino_t, const char*) { refuse(req); };
    ops.fallocate = [](fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) {
        refuse(req);
    };
    ops.copy_file_range = [](fuse_req_t req, fuse_ino_t, off_t, fuse_file_info*, fuse_ino_t, off_t,
                             fuse_file_info*, size_t, int) { refuse(req); };
}

} // namespace clairfs::fuse
