// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

// Dataset files are opened with noflush, so their close() costs no round
// trip; only the control files' closes arrive here. Files the kernel opened
// itself (--kernel-opens, --opens fanotify) carry no noflush: the first
// such FLUSH is answered ENOSYS, after which the kernel sends none, for
// any file, and the control files' writes are applied as they come (or at
// release, for a control file opened while OPENs were still sent).
void fuse_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (fi->fh == 0 && filesystem_of(req).kernel_opens()) return reply_error(req, -ENOSYS);
    if (control_flush(req, ino, fi)) return;
    fuse_reply_err(req, 0);
}

} // namespace clairfs::fuse
