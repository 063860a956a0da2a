// SPDX-License-Identifier: MIT
// Checks made before anything is mounted, so that bad input ends with one
// clear line and leaves nothing behind.
#pragma once

#include <string>

namespace clairfs::cli {

struct Backing {
    int fd = -1;      // O_DIRECTORY; stays valid even if the mount hides the path
    std::string real; // realpath, for symlink confinement and messages
};

// Each returns "" or the one-line reason.
std::string check_fuse_device();
std::string open_backing(const std::string& path, Backing& out);
std::string check_mountpoint(const std::string& path);
// If `path` is a dead clairfs mount (its daemon gone) of `backing`, detaches
// it and logs one line; any other dead FUSE mount there gives the reason
// with the command that recovers.
std::string clear_dead_mount(const std::string& path, const std::string& backing);

} // namespace clairfs::cli
