// SPDX-License-Identifier: MIT
#include "backing_file.hpp"
#include "control_nodes.hpp"
#include "fuse_ops.hpp"

#include <memory>
#include <sys/stat.h>

namespace clairfs::fuse {
namespace {

// A file the kernel reads from its backing file itself (FUSE passthrough):
// its backing id, where this kernel gives one. False when the open failed
// and is answered.
bool pass_through(fuse_req_t req, Filesystem& fs, const index::Node& n, index::NodeId id,
                  OpenFile& of, fuse_file_info* fi) {
    int32_t backing = fs.passthrough.open(req, fs, n, id);
    if (backing < 0) {
        fs.closed(id);
        fs.engine->released(id, 0, prefetch::OpenPush::none);
        reply_error(req, backing);
        return false;
    }
    of.backing_id = backing;
#if CLAIRFS_HAVE_PASSTHROUGH
    fi->backing_id = backing;
#else
    (void)fi;
#endif
    return true;
}

// A tiered file whose SSD entry the kernel may read itself: passed
// through from the entry's file, and the RAM tier's copy (if any) is not
// pinned or pushed; a file held by chunk, from its SSD file once whole.
// Else counted as a cached open (Passthrough::open_tier).
void tier_open(fuse_req_t req, Filesystem& fs, index::NodeId id, OpenFile& of,
               fuse_file_info* fi) {
    int32_t backing = fs.passthrough.open_tier(req, fs, id);
    if (backing == 0) {
        of.tier_cached = true;
        return;
    }
    of.backing_id = backing;
    of.push = prefetch::OpenPush::kernel;
    of.blob.reset();
#if CLAIRFS_HAVE_PASSTHROUGH
    fi->backing_id = backing;
#else
    (void)fi;
#endif
}

} // namespace

// Every open reaches the daemon: opens are how clairfs follows the job
// through its predicted order. The open itself touches no backing file.
void fuse_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    // --kernel-opens: the first ENOSYS tells the kernel to stop sending
    // OPEN and RELEASE at all (FUSE_CAP_NO_OPEN_SUPPORT), for every file,
    // the control files too (control_files.cpp serves them unopened).
    // --opens fanotify: the same, once fanotify has the mount in view (its
    // watcher opens the status file then, to make the switch at once);
    // until then opens are followed here.
    if (fs.options.fast_path.kernel_opens || (fs.open_watch && fs.open_watch->watching()))
        return reply_error(req, -ENOSYS);
    if (control_open(req, ino, fi)) return;
    const index::Node* n = node_of(fs, ino);
    if (!n) return reply_error(req, -ENOENT);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return reply_error(req, -EROFS);
    if (!S_ISREG(n->mode)) return reply_error(req, S_ISDIR(n->mode) ? -EISDIR : -EINVAL);

    fs.counters.opens.fetch_add(1, std::memory_order_relaxed);
    auto of = std::make_unique<OpenFile>();
    // Held by the open, the bytes survive eviction until release.
    const index::NodeId id = fs.index.id_of(*n);
    fs.opening(id);
    of->blob = fs.engine->opened(id, static_cast<uint32_t>(fuse_req_ctx(req)->pid));
    const prefetch::ReadSource source = fs.engine->source(*n);
    if (fs.engine->ssd_by_kernel(source)) tier_open(req, fs, id, *of, fi);
    // Before the reply: the job's first read may follow it at once.
    if (of->push != prefetch::OpenPush::kernel) of->push = fs.engine->push_on_open(id, of->blob);
    if (source == prefetch::ReadSource::passthrough && !pass_through(req, fs, *n, id, *of, fi))
        return;
    fi->fh = reinterpret_cast<uint64_t>(of.get());
    // The bytes cannot change while mounted. Not with passthrough: the
    // kernel refuses the open (EIO) with any flag beside it but a few, and
    // the backing file's own page cache serves it then.
    fi->keep_cache = of->backing_id == 0;
    fi->noflush = 1;
    if (fuse_reply_open(req, fi) == 0) {
        of.release();
        return;
    }
    // The opener was interrupted: no RELEASE will come for this open.
    if (of->backing_id) fs.passthrough.release(nullptr, id);
    if (of->tier_cached) fs.passthrough.cached_release(id);
    fs.closed(id);
    fs.engine->released(id, 0, prefetch::OpenPush::none);
}

} // namespace clairfs::fuse
