// SPDX-License-Identifier: MIT
// The writers of `clairfs ranges`, one per kind of data file. Each fills
// `out` with sample i's extent in the file and returns an empty Failure, or
// why it could not; none checks bounds or overlap (check_extents does).
#pragma once

#include "extents.hpp"

#include <string>
#include <vector>

namespace clairfs::ranges {

// Sample i: the value of the i-th key of the main database of the LMDB
// environment `dir`, in LMDB's key order, within dir/data.mdb.
Failure lmdb_extents(const std::string& dir, Progress& progress, std::vector<Extent>& out);

// Sample i: row i (along the first axis) of dataset `dataset` of `file`.
Failure hdf5_extents(const std::string& file, const std::string& dataset, Progress& progress,
                     std::vector<Extent>& out);

// Sample i: [header + i * record, header + (i + 1) * record) of a file of
// `file_size` bytes.
Failure fixed_extents(const std::string& file, uint64_t file_size, uint64_t header,
                      uint64_t record, std::vector<Extent>& out);

// Sample i from the .npy file `index`: [o[i], o[i + 1]) of a 1-D array o of
// n + 1 boundaries, or (offset, length) row i of an (n, 2) array.
Failure npy_extents(const std::string& index, Progress& progress, std::vector<Extent>& out);

} // namespace clairfs::ranges
