// SPDX-License-Identifier: MIT
// Names and attributes of the control directory (see control_nodes.hpp).
#include "control_nodes.hpp"

#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace clairfs::fuse {
namespace {

// The directory and the status document exist from the mount on; one
// timestamp keeps their attributes stable.
timespec mount_time() {
    static const timespec t = [] {
        timespec now{};
        clock_gettime(CLOCK_REALTIME, &now);
        return now;
    }();
    return t;
}

void fill_control_stat(const Filesystem& fs, fuse_ino_t ino, struct stat& st) {
    std::memset(&st, 0, sizeof st);
    st.st_ino = ino;
    // The control directory and files belong to --control-owner's user, so
    // that default_permissions lets that user write the control file.
    int64_t owner = fs.options.control_owner;
    st.st_uid = owner >= 0 ? static_cast<uid_t>(owner) : geteuid();
    st.st_gid = getegid();
    st.st_blksize = 4096;
    st.st_mtim = st.st_atim = st.st_ctim = mount_time();
    if (ino == control_dir_ino(fs)) {
        st.st_mode = S_IFDIR | 0755;
        st.st_nlink = 2;
        return;
    }
    st.st_nlink = 1;
    if (ino == control_file_ino(fs)) {
        st.st_mode = S_IFREG | 0644;
        // Cheap, and lets `test -s` tell whether a job is registered.
        if (fs.control) st.st_size = static_cast<off_t>(fs.control->control_text().size());
    } else {
        // A live document like /proc's files: size 0, read to the end
        // (direct_io). Under --kernel-opens there are no opens of ours and
        // reads go through the page cache, which stops at st_size.
        st.st_mode = S_IFREG | 0444;
        if (fs.kernel_opens() && fs.control)
            st.st_size = static_cast<off_t>(unopened_status(fs).size());
    }
}

} // namespace

std::string unopened_status(const Filesystem& fs) {
    std::string doc = fs.control->status_text();
    constexpr size_t page = 4096;
    size_t padded = (doc.size() + page) / page * page; // room for the newline kept last
    doc.back() = ' ';
    doc.resize(padded - 1, ' ');
    doc += '\n';
    return doc;
}

void fill_control_entry(const Filesystem& fs, fuse_ino_t ino, fuse_entry_param& e) {
    std::memset(&e, 0, sizeof e);
    e.ino = ino;
    e.generation = 1;
    // Timeouts 0: sizes and the registration change under the kernel.
    fill_control_stat(fs, ino, e.attr);
}

bool control_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    Filesystem& fs = filesystem_of(req);
    fuse_entry_param e;
    if (parent == ino_of(index::root_id) && std::strcmp(name, control_dir_name) == 0) {
        // Shadows a backing .clairfs (Controller warns about it at mount).
        fill_control_entry(fs, control_dir_ino(fs), e);
    } else if (parent == control_dir_ino(fs)) {
        if (std::strcmp(name, "control") == 0)
            fill_control_entry(fs, control_file_ino(fs), e);
        else if (std::strcmp(name, "status") == 0)
            fill_control_entry(fs, status_file_ino(fs), e);
        else {
            reply_error(req, -ENOENT);
            return true;
        }
        // An open the kernel makes itself keeps the file's pages (no
        // direct_io without an OPEN reply), so a later read of the
        // document would find the earlier one. Every open by name looks
        // the name up first (entry timeout 0): the old pages go here,
        // before the reply, so the open's reads ask the daemon again.
        if (fs.kernel_opens() && fs.session)
            fuse_lowlevel_notify_inval_inode(fs.session, e.ino, 0, 0);
    } else if (is_control_ino(fs, parent)) {
        reply_error(req, -ENOTDIR);
        return true;
    } else {
        return false;
    }
    fuse_reply_entry(req, &e);
    return true;
}

bool control_getattr(fuse_req_t req, fuse_ino_t ino) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    struct stat st;
    fill_control_stat(fs, ino, st);
    fuse_reply_attr(req, &st, 0);
    return true;
}

bool control_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    if (ino != control_dir_ino(fs))
        reply_error(req, -ENOTDIR);
    else
        fuse_reply_open(req, fi);
    return true;
}

bool control_listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
    Filesystem& fs = filesystem_of(req);
    if (!is_control_ino(fs, ino)) return false;
    if (ino != control_dir_ino(fs) || off < 0) {
        reply_error(req, ino != control_dir_ino(fs) ? -ENOTDIR : -EINVAL);
        return true;
    }

    // Offsets are positions, as in dir_listing.cpp.
    const fuse_ino_t inos[] = {control_dir_ino(fs), ino_of(index::root_id), control_file_ino(fs),
                               status_file_ino(fs)};
    const char* names[] = {".", "..", "control", "status"};
    std::vector<char> buf(size);
    size_t used = 0;
    for (auto pos = static_cast<size_t>(off); pos < 4; ++pos) {
        fuse_entry_param e;
        if (pos == 1)
            fill_entry(fs, fs.index.node(index::root_id), e);
        else
            fill_control_entry(fs, inos[pos], e);
        size_t room = size - used;
        auto next = static_cast<off_t>(pos + 1);
        size_t need =
            plus ? fuse_add_direntry_plus(req, buf.data() + used, room, names[pos], &e, next)
                 : fuse_add_direntry(req, buf.data() + used, room, names[pos], &e.attr, next);
        if (need > room) break;
        used += need;
    }
    fuse_reply_buf(req, buf.data(), used);
    return true;
}

} // namespace clairfs::fuse
