// SPDX-License-Identifier: MIT
// ImageFolder numbering against hand-written torchvision 0.14.1 orders.
#include "dataset_build.hpp"
#include "raw_tree_builder.hpp"
#include "tricky_tree.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using layout::LayoutKind;

TEST_CASE("imagefolder numbers the tricky tree exactly as torchvision does") {
    DiskTree t;
    make_tricky_tree(t.root);
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(ds.classes == tricky_classes());
    CHECK(paths_of(idx, ds) == tricky_samples());
}

TEST_CASE("imagefolder gives each sample its class index, classes in one run each") {
    DiskTree t;
    make_tricky_tree(t.root);
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    REQUIRE(ds.class_begin.size() == ds.classes.size() + 1);
    CHECK(ds.class_begin.back() == ds.samples.size());
    for (size_t i = 0; i < ds.samples.size(); ++i) {
        std::string path = ds.path(idx, i);
        const std::string& cls = ds.classes[ds.class_of(i)];
        CHECK(path.substr(0, cls.size() + 1) == cls + "/");
    }
    CHECK(ds.class_of(0) == 0);
    CHECK(ds.class_of(ds.samples.size() - 1) == ds.classes.size() - 1);
}

TEST_CASE("imagefolder samples open what the job would open") {
    DiskTree t;
    make_tricky_tree(t.root);
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    auto opened = [&](const std::string& path) {
        for (size_t i = 0; i < ds.samples.size(); ++i)
            if (ds.path(idx, i) == path) return layout::opened_node(idx, ds.samples[i]);
        FAIL("no sample " << path);
        return layout::no_node;
    };
    index::NodeId a = idx.id_of(*idx.find("cat/a.jpg"));
    CHECK(opened("cat/a.jpg") == a);
    CHECK(opened("cat/link.jpg") == a);
    CHECK(opened("cat link/link.jpg") == a);
    CHECK(opened("cat/broken.jpg") == layout::no_node);
    CHECK(opened("cat link/linked-sub/i.png") == idx.id_of(*idx.find("dog/inner/i.png")));
}

TEST_CASE("imagefolder sorts walked directories by full path, not depth-first") {
    DiskTree t;
    t.add_all({"c/sub/1.jpg", "c/sub x/2.jpg", "c/sub-x/3.jpg", "c/sub/deeper/4.jpg",
               "c/sub.d/5.jpg", "c/sub/a b/6.jpg", "c/sub/a/7.jpg", "c/0.jpg", "c/a/z/8.jpg",
               "c/b/9.jpg"});
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(paths_of(idx, ds) ==
          std::vector<std::string>{"c/0.jpg", "c/a/z/8.jpg", "c/b/9.jpg", "c/sub/1.jpg",
                                   "c/sub x/2.jpg", "c/sub-x/3.jpg", "c/sub.d/5.jpg",
                                   "c/sub/a/7.jpg", "c/sub/a b/6.jpg", "c/sub/deeper/4.jpg"});
}

TEST_CASE("imagefolder matches extensions without regard to ASCII case, and nothing else") {
    DiskTree t;
    t.add_all({"c/a.JPG", "c/b.Jpeg", "c/c.TIFF", "c/d.tif", "c/e.WebP", "c/f.PPM", "c/g.Bmp",
               "c/h.pgm", "c/i.png", "c/jpg", "c/k.jpg.txt", "c/l.gif", "c/m.JPEG ", "c/.jpg",
               "c/n.j\xc3\xa9g", "c/o.jp\xc4\xb0", "c/p.jpg\xe2\x84\xaa"});
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(paths_of(idx, ds) == std::vector<std::string>{"c/.jpg", "c/a.JPG", "c/b.Jpeg", "c/c.TIFF",
                                                        "c/d.tif", "c/e.WebP", "c/f.PPM", "c/g.Bmp",
                                                        "c/h.pgm", "c/i.png"});
}

TEST_CASE("imagefolder refuses a class without samples, as torchvision does") {
    DiskTree t;
    t.add_all({"a/x.jpg", ".ipynb_checkpoints/", "b/notes.txt"});
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "class '.ipynb_checkpoints' has no samples (torchvision raises FileNotFoundError)");
    CHECK(ds.samples.empty());
}

TEST_CASE("imagefolder needs at least one class directory") {
    DiskTree t;
    t.add_all({"x.jpg", "y.png"});
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "no class directories (torchvision raises FileNotFoundError)");
}

TEST_CASE("imagefolder reports a symlink cycle instead of walking it forever") {
    DiskTree t;
    t.add("cat/sub/a.jpg");
    t.link("cat/sub/up", "..");
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "symlink cycle: 'cat/sub/up' leads back to 'cat' (os.walk(followlinks=True) would "
          "not end)");
}

TEST_CASE("imagefolder reports a class that links back to the dataset root") {
    DiskTree t;
    t.add("cat/a.jpg");
    t.link("all", ".");
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "symlink cycle: 'all/all' leads back to 'all' (os.walk(followlinks=True) would not "
          "end)");
}

TEST_CASE("imagefolder walks a directory reached twice without a cycle twice") {
    DiskTree t;
    t.add_all({"shared/s.jpg", "c/own.jpg"});
    t.link("c/one", "../shared");
    t.link("c/two", "../shared");
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(paths_of(idx, ds) ==
          std::vector<std::string>{"c/own.jpg", "c/one/s.jpg", "c/two/s.jpg", "shared/s.jpg"});
}

TEST_CASE("imagefolder fails where torchvision's find_classes raises on a root entry") {
    DiskTree t;
    t.add("cat/a.jpg");
    t.link("self", "self");
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "'self': too many levels of symbolic links (torchvision's is_dir() raises OSError)");
}

TEST_CASE("imagefolder keeps looping links inside a class as files, as os.walk does") {
    DiskTree t;
    t.add("cat/a.jpg");
    t.link("cat/self.jpg", "self.jpg");
    t.link("cat/gone.png", "nowhere/x");
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(paths_of(idx, ds) ==
          std::vector<std::string>{"cat/a.jpg", "cat/gone.png", "cat/self.jpg"});
    CHECK(layout::opened_node(idx, ds.samples[2]) == layout::no_node);
}

TEST_CASE("imagefolder can be rooted below the mount root, through a symlink too") {
    DiskTree t;
    t.add_all({"train/a/1.jpg", "train/b/2.jpg", "val/a/3.jpg"});
    t.link("current", "train");
    auto idx = t.scan();
    for (const char* root : {"train", "current", "./train/", "val/../train"}) {
        layout::Dataset ds;
        REQUIRE(build(idx, LayoutKind::imagefolder, ds, "", root) == "");
        CHECK(paths_of(idx, ds) == std::vector<std::string>{"a/1.jpg", "b/2.jpg"});
    }
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds, "", "test") ==
          "dataset root 'test': no such file or directory");
    CHECK(build(idx, LayoutKind::imagefolder, ds, "", "train/a/1.jpg") ==
          "dataset root 'train/a/1.jpg' is not a directory");
}

TEST_CASE("imagefolder skips an unreadable subdirectory, as os.walk does") {
    auto raw = tree(entries(dir("a", entries(file("1.jpg"), dir("locked", entries(file("x.jpg"))))),
                            dir("b", entries(file("2.png")))));
    raw.root.dir->entries[0].dir->entries[1].dir->scan_errno = EACCES;
    auto idx = index::Index::build(std::move(raw));
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::imagefolder, ds) == "");
    CHECK(paths_of(idx, ds) == std::vector<std::string>{"a/1.jpg", "b/2.png"});
}

TEST_CASE("imagefolder names a class it could not read") {
    auto raw = tree(entries(dir("a", entries(file("1.jpg"))), dir("b", entries(file("2.png")))));
    raw.root.dir->entries[1].dir->scan_errno = EACCES;
    auto idx = index::Index::build(std::move(raw));
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::imagefolder, ds) ==
          "class 'b' could not be read: Permission denied (torchvision finds no samples and "
          "raises FileNotFoundError)");
}
