// SPDX-License-Identifier: MIT
#include "clairfs/index/load_index.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <stdexcept>

namespace clairfs::index {

std::string load_index(int root_fd, const std::string& root_real, const ScanOptions& options,
                       Index& out, ScanReport& report) {
    RawTree tree;
    if (int rv = scan(root_fd, root_real, options, tree, report); rv < 0)
        return sys::error_text(rv);
    try {
        out = Index::build(std::move(tree));
    } catch (const std::length_error& e) {
        return e.what();
    }
    return "";
}

} // namespace clairfs::index
