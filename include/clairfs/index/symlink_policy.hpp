// SPDX-License-Identifier: MIT
// Which symlinks of the dataset the mount shows. A link is shown only if it
// resolves inside the backing root; it is then shown with a target that
// stays inside the mount (absolute targets become relative). Pure path
// arithmetic, no I/O: the scanner supplies what realpath() said.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace clairfs::index {

// "/a/./b//c/../d" -> "/a/b/d"; relative inputs keep leading "..".
std::string lexically_normal(std::string_view path);

// True if `path` is `root` or below it; both absolute and normal.
bool is_within(std::string_view path, std::string_view root);

// Relative path from directory `from` to `to`; both absolute and normal.
std::string relative_to(std::string_view to, std::string_view from);

struct SymlinkFacts {
    std::string_view root;               // realpath of the backing directory
    std::string_view link_dir;           // realpath of the directory holding the link
    std::string_view target;             // what readlink() returned
    std::optional<std::string> resolved; // realpath() of the link, if it resolved
};

// The target to show, or nullopt to hide a link that escapes the root.
std::optional<std::string> confine_symlink(const SymlinkFacts& facts);

} // namespace clairfs::index
