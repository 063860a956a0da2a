// SPDX-License-Identifier: MIT
// The kernel's table of mounts (/proc/self/mountinfo), read without
// touching any mount point: a FUSE mount whose daemon is not yet serving
// (or is dead) would block or fail a stat() of it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace clairfs::sys {

struct MountEntry {
    std::string device;     // "MAJOR:MINOR", as /sys/class/bdi names a FUSE mount's
    std::string mountpoint; // unescaped
    std::string fstype;     // "fuse.clairfs", "ext4", ...
    std::string source;     // unescaped
};

// One line of mountinfo, or nullopt if it is not one.
std::optional<MountEntry> parse_mount_line(const std::string& line);

// Every mount, oldest first; empty if mountinfo cannot be read.
std::vector<MountEntry> mount_table();

// The newest mount of `fstype` at `abs_path` (the one the path reaches
// where mounts are stacked), or nullopt.
std::optional<MountEntry> find_mount(const std::string& abs_path, const std::string& fstype);

} // namespace clairfs::sys
