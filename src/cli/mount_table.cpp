// SPDX-License-Identifier: MIT
#include "mount_table.hpp"

#include "clairfs/index/symlink_policy.hpp"
#include "clairfs/sys/mount_info.hpp"

#include <climits>
#include <cstdlib>
#include <unistd.h>
#include <vector>

namespace clairfs::cli {

std::string absolute_path(const std::string& path) {
    if (!path.empty() && path[0] == '/') return index::lexically_normal(path);
    std::vector<char> cwd(4096);
    if (!getcwd(cwd.data(), cwd.size())) return index::lexically_normal(path);
    return index::lexically_normal(std::string(cwd.data()) + "/" + path);
}

std::string resolved_path(const std::string& path) {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf)) return buf;
    std::string abs = absolute_path(path);
    size_t slash = abs.rfind('/');
    if (slash == std::string::npos || slash == 0) return abs;
    if (::realpath(abs.substr(0, slash).c_str(), buf))
        return index::lexically_normal(std::string(buf) + abs.substr(slash));
    return abs;
}

bool is_clairfs_mount(const std::string& abs_path) {
    std::string backing;
    return clairfs_mount_backing(abs_path, backing);
}

bool clairfs_mount_backing(const std::string& abs_path, std::string& backing) {
    auto mount = sys::find_mount(abs_path, "fuse.clairfs");
    if (!mount) return false;
    // The daemon names itself "clairfs:BACKING" (session.cpp).
    const std::string tag = "clairfs:";
    backing = mount->source.starts_with(tag) ? mount->source.substr(tag.size()) : "";
    return true;
}

} // namespace clairfs::cli
