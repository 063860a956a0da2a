// SPDX-License-Identifier: MIT
// Opens, reads and writes of .clairfs/control and .clairfs/status. A read
// returns a snapshot taken at open, so one document is never torn between
// two states; writes collect in a PendingWrite and reach the Controller as
// whole registrations.
#include "clairfs/control/pending_write.hpp"
#include "clairfs/log.hpp"
#include "control_nodes.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace clairfs::fuse {
namespace {

struct ControlOpen {
    std::string snapshot;                          // what reads return
    std::unique_ptr<control::PendingWrite> writes; // opened for writing (control only)
};

ControlOpen* open_of(fuse_file_info* fi) {
    return reinterpret_cast<ControlOpen*>(fi->fh);
}

// The kernel checks modes already (default_permissions), but root passes
// those checks for any mode: this keeps "owner or root" true even on a
// mount without default_permissions. The owner is --control-owner's user
// where given, else the daemon's.
bool may_write(const Filesystem& fs, fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    int64_t owner = fs.options.control_owner;
    return ctx->uid == 0 || ctx->uid == geteuid() || (owner >= 0 && ctx->uid == owner);
}

int refused(int rv, const std::string& why) {
    LOG_WARN("registration refused: %s", why.c_str());
    return rv;
}

// `writer`: the thread that opened the control file for writing (or, with
// no OPEN, made the write): a registration saying "from_loader" names its
// process as the job's loader.
std::unique_ptr<control::PendingWrite> pending_write(control::Controller& ctl, bool append,
                                                     uint32_t writer) {
    return std::make_unique<control::PendingWrite>(
        [&ctl, writer](std::string_view text) {
            std::string why;
            int rv = ctl.write_control(text, why, writer);
            return rv < 0 ? refused(rv, why) : rv;
        },
        [&ctl](const std::string& why) { return refused(ctl.refuse(why), why); }, append);
}

// What reading `ino` (control or status) shows now.
std::string render(const Filesystem& fs, fuse_ino_t ino) {
    return ino == status_file_ino(fs) ? fs.control->status_text() : fs.control->control_text();
}

// The part of `doc` a READ of `size` bytes at `off` returns.
std::string_view slice(std::string_view doc, size_t size, off_t off) {
    return doc.substr(std::min(doc.size(), static_cast<size_t>(off)), size);
}

} // namespace

bool control_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    int access = fi->flags & O_ACCMODE;
    bool writes = access != O_RDONLY || (fi->flags & O_TRUNC);
    int err = 0;
    if (ino == control_dir_ino(fs))
        err = -EISDIR;
    else if (!fs.control)
        err = -EIO;
    else if (writes && (ino == status_file_ino(fs) || !may_write(fs, req)))
        err = -EACCES;
    if (err) {
        reply_error(req, err);
        return true;
    }

    auto co = std::make_unique<ControlOpen>();
    if (access != O_WRONLY) co->snapshot = render(fs, ino);
    if (access != O_RDONLY)
        co->writes = pending_write(*fs.control, fi->flags & O_APPEND,
                                   static_cast<uint32_t>(fuse_req_ctx(req)->pid));
    // Sizes say nothing about what a read returns, and nothing may be
    // cached: every read and write must reach us.
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->fh = reinterpret_cast<uint64_t>(co.get());
    if (fuse_reply_open(req, fi) == 0) co.release(); // else the opener was interrupted
    return true;
}

bool control_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    ControlOpen* co = open_of(fi);
    if (off < 0 || !fs.control) {
        reply_error(req, fs.control ? -EINVAL : -EIO);
        return true;
    }
    if (co) {
        std::string_view part = slice(co->snapshot, size, off);
        fuse_reply_buf(req, part.data(), part.size());
        return true;
    }
    // No open of ours (--kernel-opens: the kernel stopped sending OPEN).
    std::string fresh;
    if (off == 0) fresh = ino == status_file_ino(fs) ? unopened_status(fs) : render(fs, ino);
    std::string part; // copied out: the reply is I/O, never under the lock
    {
        std::lock_guard lk(fs.unopened.mu);
        std::string& s = ino == status_file_ino(fs) ? fs.unopened.status : fs.unopened.control;
        if (off == 0) s = std::move(fresh);
        part = slice(s, size, off);
    }
    fuse_reply_buf(req, part.data(), part.size());
    return true;
}

bool control_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                   fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (ino != control_file_ino(fs)) return false;
    ControlOpen* co = open_of(fi);
    if ((co && !co->writes) || off < 0 || !fs.control) {
        reply_error(req, -EBADF);
        return true;
    }
    // Without an open of ours (--kernel-opens) each write is taken whole.
    std::unique_ptr<control::PendingWrite> once;
    if (!co) once = pending_write(*fs.control, false, static_cast<uint32_t>(fuse_req_ctx(req)->pid));
    control::PendingWrite& w = co ? *co->writes : *once;
    int rv = w.write({buf, size}, once ? 0 : static_cast<uint64_t>(off));
    if (rv == 0 && once) rv = w.flush();
    if (rv < 0)
        reply_error(req, rv);
    else
        fuse_reply_write(req, size);
    return true;
}

bool control_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    ControlOpen* co = open_of(fi);
    // A registration cut short (printf '{"seed": 4' > control) is refused
    // here, so close() reports it.
    int rv = co && co->writes ? co->writes->flush() : 0;
    reply_error(req, rv);
    return true;
}

bool control_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    ControlOpen* co = open_of(fi);
    // A write whose FLUSH never came: the kernel stopped sending them
    // (fuse_flush.cpp) while this open was made with an OPEN. Applying
    // twice is harmless: a flushed write has nothing pending.
    if (co && co->writes) co->writes->flush();
    delete co;
    fuse_reply_err(req, 0);
    return true;
}

bool control_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set) {
    Filesystem& fs = filesystem_of(req);
    if (ino != control_file_ino(fs)) return false;
    // Truncation is how `> control` and open(O_TRUNC) begin a write; the
    // times a truncate touches come along. Nothing else may change.
    constexpr int truncation = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                               FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
                               FUSE_SET_ATTR_CTIME;
    int err = 0;
    if ((to_set & ~truncation) || !(to_set & FUSE_SET_ATTR_SIZE))
        err = -EROFS;
    else if (attr->st_size != 0)
        err = -EINVAL;
    else if (!may_write(fs, req))
        err = -EACCES;
    if (err) {
        reply_error(req, err);
        return true;
    }
    return control_getattr(req, ino);
}

} // namespace clairfs::fuse
