// SPDX-License-Identifier: MIT
// What the scanner finds, before it is frozen into an Index. Kept separate
// so unit tests can build an Index from hand-made trees without a disk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace clairfs::index {

struct RawDir;

struct RawEntry {
    std::string name;
    uint32_t mode = 0;
    uint64_t size = 0;
    int64_t mtime_sec = 0;
    uint32_t mtime_nsec = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint32_t blksize = 4096; // st_blksize
    uint64_t blocks = 0;     // st_blocks (512-byte units)
    std::string link_target;     // symlinks: what the index will show
    std::unique_ptr<RawDir> dir; // directories: their contents
};

struct RawDir {
    std::vector<RawEntry> entries;
    int scan_errno = 0; // non-zero: the directory exists but could not be read
};

// The root directory's own attributes plus its contents.
struct RawTree {
    RawEntry root;
};

} // namespace clairfs::index
