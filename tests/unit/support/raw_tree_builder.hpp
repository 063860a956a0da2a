// SPDX-License-Identifier: MIT
// Hand-made RawTrees for index tests, without touching a disk.
#pragma once

#include "clairfs/index/raw_tree.hpp"

#include <sys/stat.h>

namespace clairfs::test {

inline index::RawEntry file(std::string name, uint64_t size = 0) {
    index::RawEntry e;
    e.name = std::move(name);
    e.mode = S_IFREG | 0644;
    e.size = size;
    e.mtime_sec = 1700000000;
    e.mtime_nsec = 123;
    return e;
}

inline index::RawEntry symlink_to(std::string name, std::string target) {
    index::RawEntry e;
    e.name = std::move(name);
    e.mode = S_IFLNK | 0777;
    e.link_target = std::move(target);
    return e;
}

inline index::RawEntry dir(std::string name, std::vector<index::RawEntry> kids = {}) {
    index::RawEntry e;
    e.name = std::move(name);
    e.mode = S_IFDIR | 0755;
    e.dir = std::make_unique<index::RawDir>();
    e.dir->entries = std::move(kids);
    return e;
}

template <typename... Entries> std::vector<index::RawEntry> entries(Entries&&... es) {
    std::vector<index::RawEntry> v;
    (v.push_back(std::forward<Entries>(es)), ...);
    return v;
}

inline index::RawTree tree(std::vector<index::RawEntry> kids) {
    index::RawTree t;
    t.root = dir("", std::move(kids));
    return t;
}

} // namespace clairfs::test
