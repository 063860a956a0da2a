// SPDX-License-Identifier: MIT
// Where a manifest names its file, and how it reaches the disk.
#pragma once

#include "extents.hpp"

#include <string>

namespace clairfs::ranges {

// `file`'s PATH in a manifest for the dataset root `root`: relative to root,
// both made canonical (the file's directory, not the file, so that a data
// file that is a symlink keeps its own name, as the mount's index lists it).
// Refuses a file not below root, and a path a manifest line cannot hold (a
// tab or a line break in it).
Failure manifest_path(const std::string& file, const std::string& root, std::string& out);

// Writes `text` to `path` as a temporary file in the same directory, synced
// and then renamed over `path`: a reader sees the old manifest or the whole
// new one, never half of it, even after a crash.
Failure write_manifest(const std::string& path, const std::string& text);

} // namespace clairfs::ranges
