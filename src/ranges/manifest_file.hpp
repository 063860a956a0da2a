// SPDX-License-Identifier: MIT
// Where a manifest names its file, and how it reaches the disk.
#pragma once

#include "extents.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace clairfs::ranges {

// `file`'s PATH in a manifest for the dataset root `root`: relative to root,
// both made canonical (the file's directory, not the file, so that a data
// file that is a symlink keeps its own name, as the mount's index lists it).
// Refuses a file not below root, and a path a manifest line cannot hold (a
// tab or a line break in it).
Failure manifest_path(const std::string& file, const std::string& root, std::string& out);

// Writes the text `produce` passes, piece by piece, to its `write` (false
// once a write failed), to `path` as a temporary file in the same
// directory, synced and then renamed over `path`: a reader sees the old
// manifest or the whole new one, never half of it, even after a crash.
using WritePiece = std::function<bool(std::string_view)>;
Failure write_manifest(const std::string& path,
                       const std::function<bool(const WritePiece& write)>& produce);

} // namespace clairfs::ranges
