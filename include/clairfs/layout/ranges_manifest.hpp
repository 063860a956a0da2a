// SPDX-License-Identifier: MIT
// A ranges manifest: sample i of a dataset is bytes [offset, offset + length)
// of one file below the dataset root (a value in an LMDB's data.mdb, a row
// of an HDF5 dataset, a record of a packed binary). `clairfs ranges` writes
// one; a registration with layout "ranges" reads it (clairfs-control(5)).
//
// The text, one sample per line so that a user can read, grep and diff it:
//
//   clairfs-ranges 1
//   samples N
//   0<TAB>data.mdb<TAB>8208<TAB>40960
//   1<TAB>data.mdb<TAB>49168<TAB>40960
//   ...
//
// The first line names the format and its version; `samples` says how many
// entries follow, so a truncated manifest is refused, not half used. Entry
// lines are INDEX, PATH, OFFSET, LENGTH separated by one tab, INDEX counting
// 0, 1, 2, ... (a line out of order is refused: sample numbers are what the
// sampler draws). PATH is relative to the dataset root, without "." or ".."
// components. Lines starting with '#', and empty lines, are ignored after the
// first line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::layout {

inline constexpr std::string_view ranges_magic = "clairfs-ranges 1";

struct Ranges {
    std::vector<std::string> files; // distinct paths, in order of first use
    struct Entry {
        uint64_t offset = 0;
        uint32_t length = 0; // > 0; a sample of 4 GiB or more is refused
        uint32_t file = 0;   // index into files
    };
    std::vector<Entry> entries; // sample i is entries[i]
};

// Parses a manifest's text. Returns "" or a one-line reason naming the line
// ("line 7: ..."). Checks the format only: whether the files exist, the
// ranges lie within them and do not overlap is checked against the mount's
// index when a registration builds the dataset (layout::build_dataset).
std::string parse_ranges(std::string_view text, Ranges& out);

// Adds one sample (the next index) to `r`, reusing the path's entry in
// `r.files` if it is the last one used or already present.
void add_range(Ranges& r, std::string_view path, uint64_t offset, uint32_t length);

// The manifest's text; `comment` (may be empty) goes in '#' lines after the
// first, to say where the manifest came from.
std::string format_ranges(const Ranges& r, std::string_view comment = {});

// The same text in pieces of about 1 MiB, each passed to `write`, so that a
// manifest of millions of samples is never held whole (515 MB for 14.2M).
// False as soon as `write` returns false.
bool format_ranges(const Ranges& r, std::string_view comment,
                   const std::function<bool(std::string_view)>& write);

} // namespace clairfs::layout
