// SPDX-License-Identifier: MIT
// Symlinks followed inside the index the way the kernel follows them inside
// the mount, so a dataset layout can tell what a job's stat() or open() will
// reach without touching the backing file system again.
#pragma once

#include "clairfs/index/index.hpp"

#include <string_view>

namespace clairfs::index {

enum class ResolveStatus {
    ok,
    missing,    // a component does not exist: a dangling link (ENOENT)
    not_dir,    // a component before the last is not a directory (ENOTDIR)
    loop,       // more than max_symlinks links in one lookup (ELOOP)
    unreadable, // a lookup in a directory the scan could not read (its scan_errno)
    escapes,    // ".." above the mount's root, or an absolute path: outside the index
};

// Linux's MAXSYMLINKS: links followed in one path lookup, chains and
// intermediate components counted together.
inline constexpr int max_symlinks = 40;

struct Resolved {
    const Node* node = nullptr; // set exactly when status == ok
    ResolveStatus status = ResolveStatus::ok;
};

// What `n` leads to: `n` itself unless it is a symlink; a symlink's target
// is read relative to the link's directory and followed through chains.
Resolved resolve(const Index& idx, const Node& n);

// What open() of `path` relative to directory `start` reaches: symlinks
// followed in every component, the last included. "" is `start` itself; a
// trailing '/' requires a directory.
Resolved resolve_path(const Index& idx, const Node& start, std::string_view path);

// A short phrase for error messages, such as "no such file or directory".
std::string_view describe(ResolveStatus status);

} // namespace clairfs::index
