// SPDX-License-Identifier: MIT
// What every fuzz target asserts besides "no crash": a broken invariant
// aborts, which libFuzzer reports as a crash with the input saved.
#pragma once

#include "clairfs/index/index.hpp"
#include "raw_tree_builder.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace clairfs::fuzz {

inline void require(bool ok, const char* what) {
    if (ok) return;
    fprintf(stderr, "fuzz invariant broken: %s\n", what);
    abort();
}

// Refusals are shown on one line (status, the daemon's log, stderr).
inline void require_one_line(std::string_view why) {
    require(why.find('\n') == std::string_view::npos && why.find('\r') == std::string_view::npos,
            "a reason spans more than one line");
}

// Reads little fields off the front of the input, zeros once it runs out.
struct Cursor {
    std::string_view in;
    template <class T> T take() {
        T v{};
        size_t n = std::min(sizeof(T), in.size());
        std::memcpy(&v, in.data(), n);
        in.remove_prefix(n);
        return v;
    }
};

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// A small tree with what trips path resolution: nested classes, a symlink
// to a file, to a directory, a dangling one, a loop, one leaving the tree.
inline const index::Index& small_index() {
    using namespace clairfs::test;
    static const index::Index idx = index::Index::build(tree(entries(
        dir("train", entries(dir("cat", entries(file("1.jpg", 10), file("2.jpg", 20))),
                             dir("dog", entries(file("3.jpg", 30), symlink_to("4.jpg", "3.jpg"))),
                             dir("empty"))),
        file("list.txt", 30), symlink_to("alias", "train"), symlink_to("dangling", "nowhere"),
        symlink_to("loop", "loop"), symlink_to("outside", "../../etc/passwd"))));
    return idx;
}

} // namespace clairfs::fuzz
