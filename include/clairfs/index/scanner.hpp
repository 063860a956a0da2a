// SPDX-License-Identifier: MIT
// Walks the backing tree once, with a pool of threads (a shared file system
// answers many directory reads in parallel far faster than one at a time).
#pragma once

#include "clairfs/index/raw_tree.hpp"

#include <cstdint>
#include <string>

namespace clairfs::index {

enum class Progress { never, auto_, always };

struct ScanOptions {
    unsigned threads = 8;
    Progress progress = Progress::auto_;
};

struct ScanReport {
    uint64_t entries = 0;
    uint64_t hidden_symlinks = 0; // escape the backing root
    uint64_t hidden_special = 0;  // fifos, sockets, devices
    uint64_t unreadable_dirs = 0;
    uint64_t vanished = 0; // listed, then gone before we could stat them
    std::string first_hidden_symlink;
    std::string first_unreadable_dir;
    double seconds = 0;
};

// root_fd is an O_DIRECTORY descriptor of the backing root, root_real its
// realpath. Returns 0, or -errno if the root itself cannot be read.
int scan(int root_fd, const std::string& root_real, const ScanOptions& options, RawTree& tree,
         ScanReport& report);

} // namespace clairfs::index
