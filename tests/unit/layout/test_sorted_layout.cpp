// SPDX-License-Identifier: MIT
// The sorted layout: regular files only, in byte order of the full path.
#include "dataset_build.hpp"
#include "raw_tree_builder.hpp"

#include <algorithm>
#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using layout::LayoutKind;

TEST_CASE("sorted lists regular files in full-path byte order, not depth-first") {
    // By hand: ' ' < '-' < '.' < '/' < digits < upper case < '_' < lower case < UTF-8.
    const std::vector<std::string> expected = {".hidden", "10",      "9",     "B",       "_u",
                                               "a b",     "a-b",     "a.d/x", "a/.h/y",  "a/b c",
                                               "a/b-c",   "a/b.txt", "a/b/d", "a/b/e/f", "a/b_c",
                                               "a/bc",    "a/c",     "b",     "\xc3\xa9"};
    CHECK(std::is_sorted(expected.begin(), expected.end()));
    DiskTree t;
    t.add_all({expected.rbegin(), expected.rend()});
    t.add("empty/");
    t.link("a/link", "../b");
    t.link("dirlink", "a");
    t.link("dangling", "nowhere");
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::sorted, ds) == "");
    CHECK(paths_of(idx, ds) == expected);
    for (const auto& s : ds.samples) CHECK(layout::opened_node(idx, s) == s.name);
}

TEST_CASE("sorted can start below the mount root") {
    DiskTree t;
    t.add_all({"data/x/1", "data/x 2", "other/3"});
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::sorted, ds, "", "data") == "");
    CHECK(paths_of(idx, ds) == std::vector<std::string>{"x 2", "x/1"});
}

TEST_CASE("sorted refuses an empty tree and a directory the scan could not read") {
    layout::Dataset ds;
    auto empty = index::Index::build(tree(entries(dir("d"), symlink_to("l", "d"))));
    CHECK(build(empty, LayoutKind::sorted, ds) == "no regular files below the dataset root");

    auto raw = tree(entries(file("a"), dir("d", entries(dir("locked"))), file("z")));
    raw.root.dir->entries[1].dir->entries[0].dir->scan_errno = EACCES;
    auto locked = index::Index::build(std::move(raw));
    CHECK(build(locked, LayoutKind::sorted, ds) ==
          "directory 'd/locked' could not be read: Permission denied");
}
