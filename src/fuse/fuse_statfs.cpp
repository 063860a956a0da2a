// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"

#include <sys/statvfs.h>

namespace clairfs::fuse {

// Space figures are the backing file system's, so df shows where the data
// really lives; the file count is the view's.
void fuse_statfs(fuse_req_t req, fuse_ino_t) {
    Filesystem& fs = filesystem_of(req);
    struct statvfs st;
    if (fstatvfs(fs.backing_fd, &st) < 0) return reply_error(req, -errno);
    st.f_files = fs.index.size();
    st.f_ffree = 0;
    st.f_favail = 0;
    st.f_flag |= ST_RDONLY;
    fuse_reply_statfs(req, &st);
}

} // namespace clairfs::fuse
