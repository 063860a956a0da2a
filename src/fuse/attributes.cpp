// SPDX-License-Identifier: MIT
#include "clairfs/fuse/filesystem.hpp"

#include <cstring>

namespace clairfs::fuse {

void fill_stat(const Filesystem& fs, const index::Node& n, struct stat& st) {
    std::memset(&st, 0, sizeof st);
    st.st_ino = ino_of(fs.index.id_of(n));
    st.st_mode = n.mode;
    st.st_nlink = n.nlink;
    const index::Attrs& a = fs.index.attrs(n);
    st.st_uid = a.uid;
    st.st_gid = a.gid;
    st.st_size = static_cast<off_t>(n.size);
    // As the backing reports them unless --blksize says otherwise: a
    // buffered reader's first read() and peek() take st_blksize bytes, and
    // a program that decides by what peek() shows must decide the same.
    st.st_blksize = static_cast<blksize_t>(fs.options.blksize ? fs.options.blksize : a.blksize);
    st.st_blocks = static_cast<blkcnt_t>(fs.index.blocks(n));
    // The scan keeps one timestamp per node; atime and ctime mirror it so
    // the view stays byte-for-byte stable for the life of the mount.
    st.st_mtim = {static_cast<time_t>(n.mtime_sec), static_cast<long>(n.mtime_nsec)};
    st.st_atim = st.st_mtim;
    st.st_ctim = st.st_mtim;
}

void fill_entry(const Filesystem& fs, const index::Node& n, fuse_entry_param& e) {
    std::memset(&e, 0, sizeof e);
    e.ino = ino_of(fs.index.id_of(n));
    e.generation = 1;
    e.attr_timeout = fs.options.cache_timeout;
    e.entry_timeout = fs.options.cache_timeout;
    fill_stat(fs, n, e.attr);
}

} // namespace clairfs::fuse
