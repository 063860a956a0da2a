// SPDX-License-Identifier: MIT
// The scanner against a real temporary directory (no FUSE needed).
#include "clairfs/index/index.hpp"
#include "clairfs/index/scanner.hpp"
#include "disk_tree.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace clairfs;

TEST_CASE("scan finds every file, directory and inside symlink with its size") {
    test::DiskTree t;
    t.write("cls a/img 1.JPG", 10);
    t.write("cls a/sub/deeper/x.png", 0);
    t.write(".hidden/y.jpg", 3);
    t.write("\xc3\xa9t\xc3\xa9/z.jpg", 4096);
    fs::create_directory_symlink("cls a", t.root / "link-to-a");
    fs::create_symlink("/etc/passwd", t.root / "escape");
    fs::create_symlink((t.root / "cls a/img 1.JPG").string(), t.root / "abs-inside");
    REQUIRE(mkfifo((t.root / "fifo").c_str(), 0644) == 0);

    index::ScanReport report;
    auto idx = t.scan(4, report);
    CHECK(idx.totals().files == 4);
    CHECK(idx.totals().symlinks == 2);
    CHECK(report.hidden_symlinks == 1);
    CHECK(report.hidden_special == 1);
    CHECK(report.first_hidden_symlink == "escape -> /etc/passwd");

    const index::Node* img = idx.find("cls a/img 1.JPG");
    REQUIRE(img);
    CHECK(img->size == 10);
    CHECK(idx.find("\xc3\xa9t\xc3\xa9/z.jpg")->size == 4096);
    CHECK(idx.find("escape") == nullptr);
    CHECK(idx.find("fifo") == nullptr);
    CHECK(idx.link_target(*idx.find("link-to-a")) == "cls a");
    CHECK(idx.link_target(*idx.find("abs-inside")) == "cls a/img 1.JPG");
}

TEST_CASE("one scan thread and many give the same index") {
    test::DiskTree t;
    for (int d = 0; d < 20; ++d)
        for (int f = 0; f < 15; ++f)
            t.write("d" + std::to_string(d) + "/s" + std::to_string(f % 3) + "/f" +
                        std::to_string(f),
                    f);
    index::ScanReport r1, r8;
    auto one = t.scan(1, r1);
    auto many = t.scan(8, r8);
    REQUIRE(one.size() == many.size());
    for (index::NodeId id = 0; id < one.size(); ++id) {
        std::string a, b;
        one.relative_path(id, a);
        many.relative_path(id, b);
        CHECK(a == b);
        CHECK(one.node(id).size == many.node(id).size);
    }
    CHECK(r1.entries == r8.entries);
}

TEST_CASE("a missing root is an error, not an empty index") {
    test::DiskTree t;
    int fd = ::open(t.root.c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    ::close(fd);
    index::RawTree tree;
    index::ScanReport report;
    CHECK(index::scan(fd, t.root.string(), {}, tree, report) == -EBADF);
}
