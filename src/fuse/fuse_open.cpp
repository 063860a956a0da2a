// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "fuse_ops.hpp"

#include <sys/stat.h>

namespace clairfs::fuse {

// Every open reaches the daemon (later, how clairfs learns the job's
// progress) but touches nothing: the backing file is opened by the first
// READ that needs it, so opens served from cache cost the shared file
// system no metadata request.
void fuse_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return reply_error(req, -EROFS);
    if (!S_ISREG(n->mode)) return reply_error(req, S_ISDIR(n->mode) ? -EISDIR : -EINVAL);
    // --kernel-opens: the first ENOSYS tells the kernel to stop sending
    // OPEN and RELEASE at all (FUSE_CAP_NO_OPEN_SUPPORT).
    if (fs.options.kernel_opens) return reply_error(req, -ENOSYS);

    fs.counters.opens.fetch_add(1, std::memory_order_relaxed);
    auto* of = new OpenFile;
    fi->fh = reinterpret_cast<uint64_t>(of);
    fi->keep_cache = 1; // the bytes cannot change while mounted
    fi->noflush = 1;
    if (fuse_reply_open(req, fi) != 0) delete of; // the opener was interrupted
}

} // namespace clairfs::fuse
