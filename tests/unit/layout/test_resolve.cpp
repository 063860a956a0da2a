// SPDX-License-Identifier: MIT
// Symlink resolution inside the index, checked against what the kernel does
// on the same tree on disk.
#include "clairfs/index/resolve.hpp"
#include "dataset_build.hpp"
#include "raw_tree_builder.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

using namespace clairfs;
using namespace clairfs::test;
using index::ResolveStatus;

namespace {

struct Resolving {
    DiskTree t;
    index::Index idx;

    // The path the index resolves `rel` to, or the failure.
    std::string where(std::string_view rel) const {
        index::Resolved r = index::resolve_path(idx, idx.node(index::root_id), rel);
        if (!r.node) return std::string(index::describe(r.status));
        std::string out;
        idx.relative_path(idx.id_of(*r.node), out);
        return out;
    }
    // What the kernel says about the same path on disk.
    std::string kernel(const std::string& rel) const {
        std::error_code ec;
        auto real = std::filesystem::canonical(t.root / rel, ec);
        if (ec) return "error";
        return std::filesystem::relative(real, t.root).string();
    }
};

} // namespace

TEST_CASE("resolve_path follows chains, links to directories, '.' and a physical '..'") {
    Resolving r;
    r.t.add_all({"d/sub/f.jpg", "e/g.jpg", "top"});
    r.t.link("chain1", "chain2");
    r.t.link("chain2", "d/chain3");
    r.t.link("d/chain3", "sub/f.jpg");
    r.t.link("d/up", "../e");
    r.t.link("e/to-sub", "../d/sub");
    r.t.link("abs", (r.t.root / "e/g.jpg").string()); // the scanner makes it relative
    r.idx = r.t.scan();
    for (const char* rel : {"chain1", "d/up/g.jpg", "e/to-sub/../up/g.jpg", "./d/./sub//f.jpg",
                            "e/to-sub/..", "abs", "d/sub/", "d/chain3"}) {
        CAPTURE(rel);
        CHECK(r.where(rel) == r.kernel(rel));
    }
    CHECK(r.where("e/to-sub/..") == "d"); // ".." of where the link led, not lexical
    CHECK(r.where("") == "");
}

TEST_CASE("resolve_path fails where the kernel fails, with the reason") {
    Resolving r;
    r.t.add_all({"d/f.jpg", "top"});
    r.t.link("dangling", "nowhere");
    r.t.link("self", "self");
    r.t.link("ping", "pong");
    r.t.link("pong", "ping");
    r.idx = r.t.scan();
    CHECK(r.where("nowhere") == "no such file or directory");
    CHECK(r.where("dangling") == "no such file or directory");
    CHECK(r.where("self") == "too many levels of symbolic links");
    CHECK(r.where("ping") == "too many levels of symbolic links");
    CHECK(r.where("top/x") == "a path component is not a directory");
    CHECK(r.where("top/") == "a path component is not a directory");
    CHECK(r.where("top/.") == "a path component is not a directory");
    CHECK(r.where("d/f.jpg/..") == "a path component is not a directory");
    CHECK(r.where("..") == "leads outside the mount");
    CHECK(r.where("d/../..") == "leads outside the mount");
    CHECK(r.where("/d") == "leads outside the mount");
    for (const char* rel : {"nowhere", "dangling", "self", "ping", "top/x", "top/"})
        CHECK(r.kernel(rel) == "error");
}

TEST_CASE("resolve follows at most 40 links in one lookup, as Linux does") {
    Resolving r;
    r.t.add("target");
    // l0 -> l1 -> ... -> lN -> target: following l0 takes N + 1 links.
    auto chain = [&](const std::string& prefix, int n) {
        for (int i = 0; i < n; ++i)
            r.t.link(prefix + std::to_string(i), prefix + std::to_string(i + 1));
        r.t.link(prefix + std::to_string(n), "target");
    };
    chain("ok", 39);  // 40 links
    chain("far", 40); // 41 links
    r.idx = r.t.scan();
    CHECK(r.where("ok0") == "target");
    CHECK(r.kernel("ok0") == "target");
    CHECK(r.where("far0") == "too many levels of symbolic links");
    CHECK(r.kernel("far0") == "error");
}

TEST_CASE("resolve leaves a non-link alone and resolves a link from its own directory") {
    auto idx = index::Index::build(
        tree(entries(dir("a", entries(file("x"), symlink_to("l", "x"), symlink_to("up", "../b/y"),
                                      symlink_to("out", "../../elsewhere"),
                                      symlink_to("abs", "/etc"), symlink_to("empty", ""))),
                     dir("b", entries(file("y"))))));
    const index::Node& a = *idx.find("a");
    auto resolved = [&](const char* name) { return index::resolve(idx, *idx.lookup(a, name)); };
    CHECK(resolved("x").node == idx.find("a/x"));
    CHECK(resolved("l").node == idx.find("a/x"));
    CHECK(resolved("up").node == idx.find("b/y"));
    CHECK(resolved("out").status == ResolveStatus::escapes);
    CHECK(resolved("abs").status == ResolveStatus::escapes);
    CHECK(resolved("empty").status == ResolveStatus::missing);
    CHECK(index::resolve(idx, a).node == &a);
}

TEST_CASE("resolve fails a lookup in a directory the scan could not read, as the mount does") {
    auto raw = tree(entries(dir("locked", entries(file("x"))), symlink_to("through", "locked/x"),
                            symlink_to("to-locked", "locked")));
    raw.root.dir->entries[0].dir->scan_errno = EACCES;
    auto idx = index::Index::build(std::move(raw));
    const index::Node& root = idx.node(index::root_id);
    CHECK(index::resolve(idx, *idx.find("through")).status == ResolveStatus::unreadable);
    CHECK(index::resolve(idx, *idx.find("to-locked")).node == idx.find("locked"));
    CHECK(index::resolve_path(idx, root, "locked/x").status == ResolveStatus::unreadable);
    CHECK(index::resolve_path(idx, root, "locked/..").node == &root);
}
