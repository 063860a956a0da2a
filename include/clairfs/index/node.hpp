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
    uint32_t owner; // index into Index::owners()
    uint16_t name_len;
    uint16_t scan_errno; // a directory the scan could not read answers with this
};
static_assert(sizeof(Node) == 56, "keep Node compact: one per file of the dataset");

struct Owner {
    uint32_t uid;
    uint32_t gid;
    bool operator==(const Owner&) const = default;
};

} // namespace clairfs::index
