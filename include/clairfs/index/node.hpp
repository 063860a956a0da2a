// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

namespace clairfs::index {

using NodeId = uint32_t; // position in Index::nodes(); inode number is id + 1

inline constexpr NodeId root_id = 0;

// One entry of the immutable tree: 56 bytes, names and symlink targets live
// in the index's arena. Children of a directory are the contiguous,
// byte-sorted range [first_child, first_child + child_count).
struct Node {
    uint64_t size; // st_size; for a symlink, the target's length
    int64_t mtime_sec;
    uint64_t name_off; // name at arena[name_off], symlink target right after it
    uint32_t mtime_nsec;
    uint32_t mode;      // st_mode, type bits included
    NodeId parent;      // the root is its own parent
    NodeId first_child; // directories only
    uint32_t child_count;
    uint32_t nlink; // directories: 2 + subdirectories; others 1
    uint32_t attrs; // index into the index's shared attributes (Attrs)
    uint16_t name_len;
    uint16_t scan_errno; // a directory the scan could not read answers with this
};
static_assert(sizeof(Node) == 56, "keep Node compact: one per file of the dataset");

// What many nodes share, kept once: the owner, the block size the backing
// file system reports, and the unit its allocation rounds a file's size up
// to (st_blocks is then round_up(size, unit) / 512). A program must see
// through the mount what it sees on the backing file system: Python's
// buffered peek() and PIL's first read() take st_blksize bytes.
struct Attrs {
    uint32_t uid;
    uint32_t gid;
    uint32_t blksize;
    uint32_t block_unit; // 0: st_blocks of this node is in Index::blocks' exceptions
    bool operator==(const Attrs&) const = default;
};

} // namespace clairfs::index
