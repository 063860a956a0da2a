// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace clairfs::cli {

// Absolute, lexically normal form of `path`, without touching it (a dead
// FUSE mount answers ENOTCONN to everything, realpath() included).
std::string absolute_path(const std::string& path);

// The mount point as mountinfo will spell it: realpath() where the path
// answers, else its parent's realpath plus the last component (a dead FUSE
// mount answers ENOTCONN), else absolute_path().
std::string resolved_path(const std::string& path);

// True if /proc/self/mountinfo lists a clairfs mount at `abs_path`.
bool is_clairfs_mount(const std::string& abs_path);

// Like is_clairfs_mount, and sets `backing` to the backing directory the
// mount serves (from its source, "clairfs:BACKING"; "" if that is missing).
bool clairfs_mount_backing(const std::string& abs_path, std::string& backing);

} // namespace clairfs::cli
