// SPDX-License-Identifier: MIT
#include "mount_table.hpp"

#include "clairfs/index/symlink_policy.hpp"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

namespace clairfs::cli {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

} // namespace

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
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        // id parent maj:min root mountpoint options [optional...] - fstype source super
        std::istringstream fields(line);
        std::string id, parent, dev, root, mountpoint, word;
        fields >> id >> parent >> dev >> root >> mountpoint;
        while (fields >> word && word != "-") {
        }
        std::string fstype, source;
        fields >> fstype >> source;
        if (fstype != "fuse.clairfs" || unescape(mountpoint) != abs_path) continue;
        // The daemon names itself "clairfs:BACKING" (session.cpp).
        source = unescape(source);
        const std::string tag = "clairfs:";
        backing = source.starts_with(tag) ? source.substr(tag.size()) : "";
        return true;
    }
    return false;
}

} // namespace clairfs::cli
