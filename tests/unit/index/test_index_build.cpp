// SPDX-License-Identifier: MIT
#include "clairfs/index/index.hpp"
#include "raw_tree_builder.hpp"

#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace clairfs;
using namespace clairfs::test;

namespace {

std::vector<std::string> names_of(const index::Index& idx, const index::Node& d) {
    std::vector<std::string> out;
    for (const auto& n : idx.children(d)) out.emplace_back(idx.name(n));
    return out;
}

} // namespace

TEST_CASE("children are sorted by name bytes, as Python's sorted() orders UTF-8") {
    auto idx = index::Index::build(tree(entries(
        file("b"), file("_x"), file("Z"), file("a b"), file("a-b"), file("a"), file("9.jpg"),
        file("10.jpg"), file("\xc3\xa9"), file("z"), file(".hidden"), file("\xe6\x97\xa5"))));
    CHECK(names_of(idx, idx.node(index::root_id)) ==
          std::vector<std::string>{".hidden", "10.jpg", "9.jpg", "Z", "_x", "a", "a b", "a-b", "b",
                                   "z", "\xc3\xa9", "\xe6\x97\xa5"});
}

TEST_CASE("lookup finds every child and nothing else") {
    auto idx = index::Index::build(
        tree(entries(file("a"), file("ab"), file("abc"), dir("d", entries(file("inner"))))));
    const auto& root = idx.node(index::root_id);
    for (const char* name : {"a", "ab", "abc", "d"}) {
        const index::Node* n = idx.lookup(root, name);
        REQUIRE(n != nullptr);
        CHECK(idx.name(*n) == name);
        CHECK(n->parent == index::root_id);
    }
    for (const char* missing : {"", "b", "aa", "abcd", "inner", "A"})
        CHECK(idx.lookup(root, missing) == nullptr);
    CHECK(idx.lookup(*idx.lookup(root, "d"), "inner") != nullptr);
}

TEST_CASE("0-byte files, sizes and attributes survive the build") {
    auto idx = index::Index::build(tree(entries(file("empty", 0), file("big", 5'000'000'000ull))));
    const auto& root = idx.node(index::root_id);
    const index::Node* empty = idx.lookup(root, "empty");
    const index::Node* big = idx.lookup(root, "big");
    REQUIRE(empty);
    REQUIRE(big);
    CHECK(empty->size == 0);
    CHECK(big->size == 5'000'000'000ull);
    CHECK(S_ISREG(big->mode));
    CHECK(big->mtime_sec == 1700000000);
    CHECK(big->mtime_nsec == 123);
    CHECK(idx.totals().files == 2);
    CHECK(idx.totals().bytes == 5'000'000'000ull);
}

TEST_CASE("directories get nlink 2 + subdirectories and contiguous children") {
    auto idx = index::Index::build(
        tree(entries(dir("a", entries(dir("x"), dir("y"), file("f"))), dir("b"), file("c"))));
    const auto& root = idx.node(index::root_id);
    CHECK(root.nlink == 4);
    const index::Node* a = idx.lookup(root, "a");
    REQUIRE(a);
    CHECK(a->nlink == 4);
    CHECK(a->child_count == 3);
    for (const auto& kid : idx.children(*a)) CHECK(kid.parent == idx.id_of(*a));
    CHECK(idx.lookup(root, "c")->nlink == 1);
    CHECK(idx.totals().dirs == 5); // root, a, x, y, b
}

TEST_CASE("relative_path and find walk the tree both ways, however deep") {
    // 300 levels: deeper than relative_path's fixed stack of 256.
    index::RawEntry leaf = file("leaf.jpg", 7);
    for (int depth = 299; depth >= 0; --depth) {
        std::vector<index::RawEntry> kids;
        kids.push_back(std::move(leaf));
        leaf = dir("d" + std::to_string(depth), std::move(kids));
    }
    auto idx = index::Index::build(tree(entries(std::move(leaf))));
    std::string expected;
    for (int depth = 0; depth < 300; ++depth) expected += "d" + std::to_string(depth) + "/";
    expected += "leaf.jpg";

    const index::Node* n = idx.find(expected);
    REQUIRE(n);
    CHECK(n->size == 7);
    std::string path;
    idx.relative_path(idx.id_of(*n), path);
    CHECK(path == expected);
    idx.relative_path(index::root_id, path);
    CHECK(path.empty());
    CHECK(idx.find("d0/./d1") == idx.find("d0/d1"));
    CHECK(idx.find("d0/nope") == nullptr);
    CHECK(idx.find(expected + "/below-a-file") == nullptr);
}

TEST_CASE("names with spaces, newlines and every byte but / and NUL round-trip") {
    std::string odd = " lead\ttab\nnewline trail ";
    std::string high;
    for (int c = 1; c < 256; ++c)
        if (c != '/') high.push_back(static_cast<char>(c));
    auto idx = index::Index::build(tree(entries(file(odd), file(high))));
    const auto& root = idx.node(index::root_id);
    REQUIRE(idx.lookup(root, odd));
    REQUIRE(idx.lookup(root, high));
    std::string path;
    idx.relative_path(idx.id_of(*idx.lookup(root, high)), path);
    CHECK(path == high);
}

TEST_CASE("symlink targets are stored beside their names and sized like lstat") {
    auto idx = index::Index::build(tree(entries(symlink_to("l", "../some/where"), file("m"))));
    const index::Node* l = idx.lookup(idx.node(index::root_id), "l");
    REQUIRE(l);
    CHECK(S_ISLNK(l->mode));
    CHECK(idx.link_target(*l) == "../some/where");
    CHECK(l->size == 13);
    CHECK(idx.totals().symlinks == 1);
}

TEST_CASE("owners are shared between nodes with the same uid and gid") {
    auto a = file("a"), b = file("b"), c = file("c");
    a.uid = b.uid = 1000;
    a.gid = b.gid = 100;
    c.uid = 0;
    auto idx = index::Index::build(tree(entries(std::move(a), std::move(b), std::move(c))));
    const auto& root = idx.node(index::root_id);
    CHECK(idx.lookup(root, "a")->attrs == idx.lookup(root, "b")->attrs);
    CHECK(idx.attrs(*idx.lookup(root, "b")).uid == 1000);
    CHECK(idx.attrs(*idx.lookup(root, "c")).uid == 0);
}

TEST_CASE("an empty tree is just the root") {
    auto idx = index::Index::build(tree({}));
    CHECK(idx.size() == 1);
    CHECK(idx.node(index::root_id).child_count == 0);
    CHECK(idx.node(index::root_id).parent == index::root_id);
}

TEST_CASE("a directory the scan could not read keeps its errno") {
    auto locked = dir("locked");
    locked.dir->scan_errno = EACCES;
    auto idx = index::Index::build(tree(entries(std::move(locked))));
    CHECK(idx.lookup(idx.node(index::root_id), "locked")->scan_errno == EACCES);
}
