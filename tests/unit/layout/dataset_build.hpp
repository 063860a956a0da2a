// SPDX-License-Identifier: MIT
// Layout test helpers on top of the shared on-disk tree.
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "disk_tree.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace clairfs::test {

inline std::vector<std::string> paths_of(const index::Index& idx, const layout::Dataset& ds) {
    std::vector<std::string> out;
    for (size_t i = 0; i < ds.samples.size(); ++i) out.push_back(ds.path(idx, i));
    return out;
}

// Builds the dataset and returns its error ("" on success).
inline std::string build(const index::Index& idx, layout::LayoutKind kind, layout::Dataset& ds,
                         std::string_view manifest = "", std::string_view root = "") {
    return layout::build_dataset(idx, root, kind, manifest, ds);
}

} // namespace clairfs::test
