// SPDX-License-Identifier: MIT
// The .clairfs/ control directory: three inodes that exist in no backing
// tree, numbered right after the index's. Each hook below answers a
// request and returns true if it is about one of them, false to let the
// dataset's handler answer, so every FUSE operation calls its hook first.
//
// .clairfs/          0755, reachable by lookup but never listed in the root
//                    (torchvision would count it as a class)
// .clairfs/control   0644: the registration (write JSON, read it back)
// .clairfs/status    0444: the status document
// All three are owned by the user the daemon runs as, which the kernel
// then checks writes against (default_permissions); their attributes are
// never cached, so sizes are current.
#pragma once

#include "clairfs/fuse/filesystem.hpp"

namespace clairfs::fuse {

inline constexpr const char* control_dir_name = ".clairfs";

inline fuse_ino_t control_dir_ino(const Filesystem& fs) {
    return static_cast<fuse_ino_t>(fs.index.size()) + 1;
}
inline fuse_ino_t control_file_ino(const Filesystem& fs) {
    return control_dir_ino(fs) + 1;
}
inline fuse_ino_t status_file_ino(const Filesystem& fs) {
    return control_dir_ino(fs) + 2;
}
inline bool is_control_ino(const Filesystem& fs, fuse_ino_t ino) {
    return ino >= control_dir_ino(fs) && ino <= status_file_ino(fs);
}

// The entry readdirplus and lookup return for a control inode.
void fill_control_entry(const Filesystem& fs, fuse_ino_t ino, fuse_entry_param& e);

// The status document as a read without an open of ours (--kernel-opens)
// sees it: padded with spaces to a multiple of 4 KiB. Those reads go through
// the page cache, which stops at the size the last getattr reported; a
// document whose length moved between that getattr and the READ (a counter
// gaining a digit, a job listed) came back short or torn. Padded, its size
// changes only when it outgrows a page. JSON allows the trailing blanks.
std::string unopened_status(const Filesystem& fs);

bool control_lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
bool control_getattr(fuse_req_t req, fuse_ino_t ino);
bool control_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
// readdir / readdirplus of .clairfs/ itself.
bool control_listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus);

// Opens of control and status: fi->fh then holds a ControlOpen (never an
// OpenFile), which only these hooks and the write/flush/setattr
// operations of this folder touch.
bool control_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
bool control_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
bool control_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
bool control_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                   fuse_file_info* fi);
bool control_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
bool control_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set);

} // namespace clairfs::fuse
