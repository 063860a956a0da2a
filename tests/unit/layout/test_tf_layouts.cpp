// SPDX-License-Identifier: MIT
// The TensorFlow layouts: Keras's index_directory (keras_directory) and
// tf.io.matching_files (glob). Exactness against Keras and TF themselves is
// checked by tests/order/test_tf_order.py; these pin the rules down.
#include "clairfs/layout/framework_layout.hpp"
#include "dataset_build.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using layout::LayoutKind;

TEST_CASE("keras_directory: sorted classes, walks sorted by path, Keras's extensions, no links "
          "followed below a class") {
    DiskTree t;
    t.add_all({"a/x.png", "a/sub/y.JPG", "a/sub z/w.gif", "a/.h/v.bmp", "a/n.txt", "a/t.tiff",
               "B/b.jpeg", ".hidden/h.png", "loose.png", "empty/readme.txt"});
    t.link("a/zlink.png", "../B/b.jpeg");
    t.link("a/zdir", "../B");
    t.link("L", "B");
    auto idx = t.scan();
    layout::Dataset ds;
    REQUIRE(build(idx, LayoutKind::keras_directory, ds) == "");
    CHECK(paths_of(idx, ds) == std::vector<std::string>{"B/b.jpeg", "L/b.jpeg", "a/x.png",
                                                        "a/zlink.png", "a/.h/v.bmp",
                                                        "a/sub/y.JPG", "a/sub z/w.gif"});
    CHECK(ds.classes == std::vector<std::string>{"B", "L", "a", "empty"});
}

TEST_CASE("keras_directory refuses a tree without images") {
    DiskTree t;
    t.add_all({"a/x.txt", "b.png"});
    auto idx = t.scan();
    layout::Dataset ds;
    CHECK(build(idx, LayoutKind::keras_directory, ds).starts_with("no images"));
}

TEST_CASE("glob: one component at a time, '*' within a directory, matches sorted") {
    DiskTree t;
    t.add_all({"a/x.png", "a/.y.png", "a/sub/z.png", "b/w.png", "b/v.jpg", "c.png"});
    t.link("l", "b");
    auto idx = t.scan();
    auto glob = [&](const char* pattern) {
        layout::Dataset ds;
        std::string why = layout::build_dataset(idx, "", LayoutKind::glob, pattern, ds);
        return why.empty() ? paths_of(idx, ds) : std::vector<std::string>{"!" + why};
    };
    CHECK(glob("*/*.png") == std::vector<std::string>{"a/.y.png", "a/x.png", "b/w.png", "l/w.png"});
    CHECK(glob("*.png") == std::vector<std::string>{"c.png"});
    CHECK(glob("a/*/*") == std::vector<std::string>{"a/sub/z.png"});
    CHECK(glob("[ab]/?.*") == std::vector<std::string>{"a/x.png", "b/v.jpg", "b/w.png"});
    CHECK(glob("*/nothing").front().starts_with("!pattern '*/nothing' matches no files"));
    CHECK(glob("a/*").front().find("matches the directory 'a/sub'") != std::string::npos);
}

TEST_CASE("the layout follows the framework") {
    order::JobSpec s;
    LayoutKind k;
    CHECK(layout::layout_for_job(s, std::nullopt, k) == "");
    CHECK(k == LayoutKind::imagefolder);
    CHECK(layout::layout_for_job(s, LayoutKind::glob, k) == "layout glob needs framework tensorflow");
    s.framework = order::Framework::tensorflow;
    CHECK(layout::layout_for_job(s, std::nullopt, k) == "");
    CHECK(k == LayoutKind::keras_directory);
    s.pipeline = order::TfPipeline::list_files;
    CHECK(layout::layout_for_job(s, LayoutKind::glob, k) == "");
    CHECK(k == LayoutKind::glob);
    CHECK(layout::layout_for_job(s, LayoutKind::sorted, k).starts_with("layout sorted does not fit"));
}
