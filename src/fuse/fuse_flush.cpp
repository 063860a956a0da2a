// SPDX-License-Identifier: MIT
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

namespace clairfs::fuse {

// Dataset files are opened with noflush, so their close() costs no round
// trip; only the control files' closes arrive here.
void fuse_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    if (control_flush(req, ino, fi)) return;
    fuse_reply_err(req, 0);
}

} // namespace clairfs::fuse
