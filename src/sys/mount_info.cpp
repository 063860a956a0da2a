// SPDX-License-Identifier: MIT
#include "clairfs/sys/mount_info.hpp"

#include <fstream>
#include <sstream>

namespace clairfs::sys {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        bool octal = s[i] == '\\' && i + 3 < s.size();
        if (octal) {
            for (size_t k = 1; k <= 3; ++k)
                if (s[i + k] < '0' || s[i + k] > '7') octal = false;
        }
        if (octal) {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

} // namespace

std::optional<MountEntry> parse_mount_line(const std::string& line) {
    // id parent maj:min root mountpoint options [optional...] - fstype source super
    std::istringstream fields(line);
    std::string id, parent, root, word;
    MountEntry e;
    if (!(fields >> id >> parent >> e.device >> root >> e.mountpoint)) return std::nullopt;
    bool separator = false;
    while (fields >> word)
        if (word == "-") {
            separator = true;
            break;
        }
    if (!separator || !(fields >> e.fstype)) return std::nullopt;
    fields >> e.source; // may be empty ("none" is spelled out, but be lenient)
    e.mountpoint = unescape(e.mountpoint);
    e.source = unescape(e.source);
    return e;
}

std::vector<MountEntry> mount_table() {
    std::vector<MountEntry> out;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line))
        if (auto e = parse_mount_line(line)) out.push_back(std::move(*e));
    return out;
}

std::optional<MountEntry> find_mount(const std::string& abs_path, const std::string& fstype) {
    std::optional<MountEntry> found;
    for (MountEntry& e : mount_table())
        if (e.fstype == fstype && e.mountpoint == abs_path) found = std::move(e);
    return found;
}

} // namespace clairfs::sys
