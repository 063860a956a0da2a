// SPDX-License-Identifier: MIT
// The backing store's side of a file: opened only when bytes must come from
// it, so an open served from cache costs the shared file system nothing.
#pragma once

#include "clairfs/fuse/filesystem.hpp"

#include <atomic>

namespace clairfs::fuse {

// Opens the backing file of `n` for reading and checks that it is still the
// file the scan saw (size and mtime): returns the descriptor, -ESTALE if it
// changed, or the open's -errno (-ENOENT if it vanished).
int open_verified(Filesystem& fs, const index::Node& n);

// What fuse_file_info::fh points at: the backing descriptor, opened by the
// first READ that needs it. Concurrent readahead READs race to open it; the
// loser closes its own descriptor, so no lock is held across the open.
struct OpenFile {
    std::atomic<int> fd{-1};
};

// The descriptor for `of`, opening it if this is the first READ; or -errno.
int backing_fd(Filesystem& fs, OpenFile& of, const index::Node& n);

} // namespace clairfs::fuse
