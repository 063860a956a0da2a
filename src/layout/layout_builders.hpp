// SPDX-License-Identifier: MIT
// The layouts behind build_dataset(), one file each.
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "clairfs/layout/ranges_manifest.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace clairfs::layout {

// Sample numbers are 32-bit (order::Sample), so a dataset stops here.
inline constexpr size_t max_samples = UINT32_MAX;

// Each builder fills an empty `out` from the dataset root directory, which
// build_dataset() has already resolved and checked, and returns "" or a
// one-line reason.
std::string build_imagefolder(const index::Index& idx, const index::Node& root, Dataset& out);
std::string build_sorted(const index::Index& idx, const index::Node& root, Dataset& out);
std::string build_list(const index::Index& idx, const index::Node& root, std::string_view manifest,
                       Dataset& out);
std::string build_ranges(const index::Index& idx, const index::Node& root,
                         std::string_view manifest, Dataset& out);
// The same from a manifest parsed already (parse_ranges_text), whose entries
// it lets go once the dataset holds them.
std::string build_ranges(const index::Index& idx, const index::Node& root, Ranges&& parsed,
                         Dataset& out);
// parse_ranges, its line errors named as the manifest's.
std::string parse_ranges_text(std::string_view manifest, Ranges& parsed);

std::string build_keras_directory(const index::Index& idx, const index::Node& root, Dataset& out);
std::string build_glob(const index::Index& idx, const index::Node& root, std::string_view pattern,
                       Dataset& out);

// os.DirEntry.is_dir(): follows symlinks. The directory it names, or null.
const index::Node* dir_behind(const index::Index& idx, const index::Node& entry);

// What os.scandir() lists: nothing where the scan could not read (the mount
// fails the opendir, and os.walk() skips such a directory silently).
std::span<const index::Node> listing(const index::Index& idx, const index::Node& dir);

// os.path.join(dir, name) for a relative dir, "" being the dataset root.
std::string join_path(std::string_view dir, std::string_view name);

std::string too_many_samples();

} // namespace clairfs::layout
