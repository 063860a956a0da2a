// SPDX-License-Identifier: MIT
// A temporary directory tree on disk, scanned into an Index the way a mount
// scans its backing directory, so tests see real symlinks and real names.
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/index/scanner.hpp"

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
        char tmpl[] = "/tmp/clairfs-unit-XXXXXX";
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
    // A file of `size` bytes, parents created.
    void write(const std::string& rel, size_t size) {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << std::string(size, 'x');
    }
    void add_all(const std::vector<std::string>& rels) {
        for (const auto& r : rels) add(r);
    }
    void link(const std::string& rel, const std::string& target) {
        fs::create_directories((root / rel).parent_path());
        fs::create_symlink(target, root / rel);
    }

    index::Index scan(unsigned threads, index::ScanReport& report) const {
        int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
        REQUIRE(fd >= 0);
        index::RawTree tree;
        REQUIRE(index::scan(fd, root.string(), {threads, index::Progress::never}, tree, report) ==
                0);
        ::close(fd);
        return index::Index::build(std::move(tree));
    }
    index::Index scan() const {
        index::ScanReport report;
        return scan(2, report);
    }
};

} // namespace clairfs::test
