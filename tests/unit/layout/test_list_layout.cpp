// SPDX-License-Identifier: MIT
// The list layout: a manifest of relative paths, each reaching a regular file.
#include "dataset_build.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using layout::LayoutKind;

namespace {

struct ListTree {
    DiskTree t;
    index::Index idx;
    ListTree() {
        t.add_all({"a/1.jpg", "a/2.jpg", "b/3.jpg", "top.jpg", "empty/"});
        t.link("b/to-1.jpg", "../a/1.jpg");
        t.link("alias", "a");
        t.link("dangling.jpg", "nowhere.jpg");
        t.link("loop.jpg", "loop.jpg");
        t.link("to-dir", "b");
        idx = t.scan();
    }
    std::string build(std::string_view manifest, layout::Dataset& ds) const {
        return test::build(idx, LayoutKind::list, ds, manifest);
    }
};

} // namespace

TEST_CASE("list keeps the manifest's order and spelling") {
    ListTree l;
    layout::Dataset ds;
    REQUIRE(l.build("b/3.jpg\na/1.jpg\r\ntop.jpg\nalias/2.jpg\nb/to-1.jpg\n./a//1.jpg\n"
                    "empty/../b/3.jpg",
                    ds) == "");
    CHECK(paths_of(l.idx, ds) == std::vector<std::string>{"b/3.jpg", "a/1.jpg", "top.jpg",
                                                          "alias/2.jpg", "b/to-1.jpg", "./a//1.jpg",
                                                          "empty/../b/3.jpg"});
    index::NodeId one = l.idx.id_of(*l.idx.find("a/1.jpg"));
    CHECK(layout::opened_node(l.idx, ds.samples[1]) == one);
    CHECK(layout::opened_node(l.idx, ds.samples[4]) == one);
    CHECK(layout::opened_node(l.idx, ds.samples[5]) == one);
    CHECK(ds.samples[1].dir == ds.samples[0].dir + 1); // "a" after "b"
}

TEST_CASE("list shares one directory entry among the lines that name it") {
    ListTree l;
    layout::Dataset ds;
    REQUIRE(l.build("a/1.jpg\nb/3.jpg\na/2.jpg\n", ds) == "");
    CHECK(ds.dirs == std::vector<std::string>{"a", "b"});
    CHECK(ds.samples[0].dir == ds.samples[2].dir);
}

TEST_CASE("list names the line and the reason for every path that is not a file") {
    ListTree l;
    layout::Dataset ds;
    auto line2 = [&](std::string_view path) {
        return l.build("a/1.jpg\n" + std::string(path) + "\nb/3.jpg\n", ds);
    };
    CHECK(line2("a/9.jpg") == "manifest line 2 'a/9.jpg': no such file or directory");
    CHECK(line2("zz/1.jpg") == "manifest line 2 'zz/1.jpg': no such file or directory");
    CHECK(line2("dangling.jpg") == "manifest line 2 'dangling.jpg': no such file or directory");
    CHECK(line2("loop.jpg") == "manifest line 2 'loop.jpg': too many levels of symbolic links");
    CHECK(line2("a") == "manifest line 2 'a': not a regular file");
    CHECK(line2("to-dir") == "manifest line 2 'to-dir': not a regular file");
    CHECK(line2("a/") == "manifest line 2 'a/': not a regular file");
    CHECK(line2("a/..") == "manifest line 2 'a/..': not a regular file");
    CHECK(line2("top.jpg/x") == "manifest line 2 'top.jpg/x': a path component is not a directory");
    CHECK(line2("../x.jpg") == "manifest line 2 '../x.jpg': leads outside the mount");
    CHECK(line2("/etc/passwd") ==
          "manifest line 2 '/etc/passwd': absolute path; lines are relative to the dataset root");
    CHECK(line2("") == "manifest line 2 is empty");
    CHECK(line2("\r") == "manifest line 2 is empty");
    CHECK(ds.samples.empty());
}

TEST_CASE("list allows one final newline but no blank lines, and needs a line") {
    ListTree l;
    layout::Dataset ds;
    CHECK(l.build("a/1.jpg", ds) == "");
    CHECK(l.build("a/1.jpg\r\n", ds) == "");
    CHECK(l.build("a/1.jpg\n\n", ds) == "manifest line 2 is empty");
    CHECK(l.build("\na/1.jpg", ds) == "manifest line 1 is empty");
    CHECK(l.build("", ds) == "the manifest lists no files");
}

TEST_CASE("a manifest line is quoted on one line, whatever bytes it holds") {
    // Found by fuzz_manifest: a raw '\r' split the reason in status and the log.
    ListTree l;
    layout::Dataset ds;
    std::string why = l.build("a/1.jpg\nalias/cat\rin\x01\xff.jpg\n", ds);
    CHECK(why == "manifest line 2 'alias/cat\\rin\\x01\\xff.jpg': no such file or directory");
    CHECK(l.build(std::string(5000, 'x'), ds).size() < 200);
}
