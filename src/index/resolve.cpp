// SPDX-License-Identifier: MIT
#include "clairfs/index/resolve.hpp"

#include <sys/stat.h>

namespace clairfs::index {
namespace {

// One path lookup: the link count spans every link it follows, nested or
// not, as the kernel's does, so a loop ends in ELOOP instead of recursion.
class Lookup {
public:
    explicit Lookup(const Index& idx) : idx_(idx) {}

    Resolved follow(const Node& n) {
        if (!S_ISLNK(n.mode)) return {&n, ResolveStatus::ok};
        if (++links_ > max_symlinks) return {nullptr, ResolveStatus::loop};
        std::string_view target = idx_.link_target(n);
        // The kernel refuses an empty target; walk() would read it as ".".
        if (target.empty()) return {nullptr, ResolveStatus::missing};
        return walk(idx_.node(n.parent), target);
    }

    Resolved walk(const Node& start, std::string_view path) {
        if (path.starts_with('/')) return {nullptr, ResolveStatus::escapes};
        const Node* cur = &start;
        while (!path.empty()) {
            size_t slash = path.find('/');
            Resolved r = step(*cur, path.substr(0, slash));
            if (r.status != ResolveStatus::ok) return r;
            if (slash == std::string_view::npos) return r;
            path.remove_prefix(slash + 1);
            cur = r.node;
            // "a/" and "a/b" both need `a` to be a directory.
            if (!S_ISDIR(cur->mode)) return {nullptr, ResolveStatus::not_dir};
        }
        return {cur, ResolveStatus::ok};
    }

private:
    const Index& idx_;
    int links_ = 0;

    Resolved step(const Node& dir, std::string_view part) {
        if (!S_ISDIR(dir.mode)) return {nullptr, ResolveStatus::not_dir};
        if (part.empty() || part == ".") return {&dir, ResolveStatus::ok};
        if (part == "..") {
            // The mount root's ".." is the mountpoint's parent: not in the index.
            if (idx_.id_of(dir) == root_id) return {nullptr, ResolveStatus::escapes};
            return {&idx_.node(dir.parent), ResolveStatus::ok};
        }
        // The mount answers lookups there with the scan's error, so does this.
        if (dir.scan_errno) return {nullptr, ResolveStatus::unreadable};
        const Node* child = idx_.lookup(dir, part);
        if (!child) return {nullptr, ResolveStatus::missing};
        return follow(*child);
    }
};

} // namespace

Resolved resolve(const Index& idx, const Node& n) {
    return Lookup(idx).follow(n);
}

Resolved resolve_path(const Index& idx, const Node& start, std::string_view path) {
    return Lookup(idx).walk(start, path);
}

std::string_view describe(ResolveStatus status) {
    switch (status) {
    case ResolveStatus::ok:
        return "found";
    case ResolveStatus::missing:
        return "no such file or directory";
    case ResolveStatus::not_dir:
        return "a path component is not a directory";
    case ResolveStatus::loop:
        return "too many levels of symbolic links";
    case ResolveStatus::unreadable:
        return "a directory on the way could not be read";
    case ResolveStatus::escapes:
        return "leads outside the mount";
    }
    return "unknown";
}

} // namespace clairfs::index
