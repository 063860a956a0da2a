// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/index/scanner.hpp"

#include <string>

namespace clairfs::index {

// Scans the tree under root_fd (root_real is its realpath) and freezes it
// into `out`. Returns "" or the one-line reason (the root cannot be read,
// or the tree does not fit an Index); `report` says what the scan hid.
std::string load_index(int root_fd, const std::string& root_real, const ScanOptions& options,
                       Index& out, ScanReport& report);

} // namespace clairfs::index
