// SPDX-License-Identifier: MIT
#include "clairfs/index/symlink_policy.hpp"

#include <algorithm>
#include <vector>

namespace clairfs::index {

std::string lexically_normal(std::string_view path) {
    bool absolute = !path.empty() && path.front() == '/';
    std::vector<std::string_view> parts;
    size_t pos = 0;
    while (pos <= path.size()) {
        size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        std::string_view part = path.substr(pos, slash - pos);
        pos = slash + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") {
            if (!parts.empty() && parts.back() != "..")
                parts.pop_back();
            else if (!absolute)
                parts.push_back(part);
            continue; // "/.." is "/"
        }
        parts.push_back(part);
    }
    std::string out = absolute ? "/" : "";
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i) out += '/';
        out += parts[i];
    }
    return out.empty() ? "." : out;
}

bool is_within(std::string_view path, std::string_view root) {
    if (root == "/") return !path.empty() && path.front() == '/';
    if (!path.starts_with(root)) return false;
    return path.size() == root.size() || path[root.size()] == '/';
}

std::string relative_to(std::string_view to, std::string_view from) {
    auto split = [](std::string_view p) {
        std::vector<std::string_view> v;
        size_t pos = 0;
        while (pos < p.size()) {
            size_t slash = p.find('/', pos);
            if (slash == std::string_view::npos) slash = p.size();
            if (slash > pos) v.push_back(p.substr(pos, slash - pos));
            pos = slash + 1;
        }
        return v;
    };
    auto a = split(to), b = split(from);
    size_t common = 0;
    while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
    std::string out;
    for (size_t i = common; i < b.size(); ++i) out += out.empty() ? ".." : "/..";
    for (size_t i = common; i < a.size(); ++i) {
        if (!out.empty()) out += '/';
        out += a[i];
    }
    return out.empty() ? "." : out;
}

namespace {

// True if walking `target` from `link_dir` component by component ever goes
// above `root` (all three absolute and normal).
bool climbs_above(std::string_view root, std::string_view link_dir, std::string_view target) {
    long depth = 0;
    for (size_t i = root.size(); i < link_dir.size(); ++i) depth += link_dir[i] == '/';
    size_t pos = 0;
    while (pos <= target.size()) {
        size_t slash = std::min(target.find('/', pos), target.size());
        std::string_view part = target.substr(pos, slash - pos);
        pos = slash + 1;
        if (part == "..") {
            if (--depth < 0) return true;
        } else if (!part.empty() && part != ".") {
            ++depth;
        }
    }
    return false;
}

} // namespace

std::optional<std::string> confine_symlink(const SymlinkFacts& f) {
    bool absolute = !f.target.empty() && f.target.front() == '/';
    if (f.resolved) {
        if (!is_within(*f.resolved, f.root)) return std::nullopt;
        // A relative target that never climbs above the root resolves the
        // same way inside the mount. An absolute one, or one that climbs out
        // and comes back in by the root's own name, would leave the mount:
        // point those at the same place relative to the link instead.
        if (absolute || climbs_above(f.root, f.link_dir, f.target))
            return relative_to(*f.resolved, f.link_dir);
        return std::string(f.target);
    }
    // Dangling (or looping) link: judge it by its text alone, as a native
    // listing would show it, as long as that text cannot point outside.
    std::string joined =
        absolute ? std::string(f.target) : std::string(f.link_dir) + "/" + std::string(f.target);
    std::string normal = lexically_normal(joined);
    if (!is_within(normal, f.root)) return std::nullopt;
    return absolute ? relative_to(normal, f.link_dir) : std::string(f.target);
}

} // namespace clairfs::index
