// SPDX-License-Identifier: MIT
// A temporary directory tree on disk, scanned into an Index the way a mount
// scans its backing directory, so layouts see real symlinks and real names.
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/index/scanner.hpp"
#include "clairfs/layout/dataset.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace clairfs::test {

namespace fs = std::filesystem;

struct DiskTree {
    fs::path root;

    DiskTree() {
        char tmpl[] = "/tmp/clairfs-layout-XXXXXX";
        REQUIRE(mkdtemp(tmpl));
        root = fs::canonical(tmpl);
    }
    ~DiskTree() { fs::remove_all(root); }

    // Creates `rel` and its parents; a trailing '/' makes a directory.
    void add(const std::string& rel) {
        if (rel.ends_with('/')) return (void)fs::create_directories(root / rel);
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << rel;
    }
    void add_all(const std::vector<std::string>& rels) {
        for (const auto& r : rels) add(r);
    }
    void link(const std::string& rel, const std::string& target) {
        fs::create_directories((root / rel).parent_path());
        fs::create_symlink(target, root / rel);
    }

    index::Index scan() const {
        int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
        REQUIRE(fd >= 0);
        index::RawTree tree;
        index::ScanReport report;
        REQUIRE(index::scan(fd, root.string(), {2, index::Progress::never}, tree, report) == 0);
        ::close(fd);
        return index::Index::build(std::move(tree));
    }
};

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
