// SPDX-License-Identifier: MIT
// The ranges layout: a manifest of byte ranges, parsed, then checked
// against the files it names (layout/ranges_manifest.hpp, ranges_layout.cpp).
#include "clairfs/layout/ranges_manifest.hpp"
#include "dataset_build.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using layout::LayoutKind;

namespace {

struct RangesTree {
    DiskTree t;
    index::Index idx;
    RangesTree() {
        t.write("data.mdb", 1000);
        t.write("sub/rows.bin", 300);
        t.add("sub/dir/");
        t.link("link.bin", "sub/rows.bin");
        idx = t.scan();
    }
    std::string build(std::string_view manifest, layout::Dataset& ds) const {
        return test::build(idx, LayoutKind::ranges, ds, manifest);
    }
};

std::string manifest(std::string_view body, size_t n) {
    return "clairfs-ranges 1\nsamples " + std::to_string(n) + "\n" + std::string(body);
}

} // namespace

TEST_CASE("format_ranges and parse_ranges round-trip, comments and CRLF allowed") {
    layout::Ranges r;
    layout::add_range(r, "data.mdb", 16, 100);
    layout::add_range(r, "sub/rows.bin", 0, 10);
    layout::add_range(r, "data.mdb", 500, 7);
    CHECK(r.files == std::vector<std::string>{"data.mdb", "sub/rows.bin"});
    std::string text = layout::format_ranges(r, "written by a test\nsecond line");
    CHECK(text == "clairfs-ranges 1\n# written by a test\n# second line\nsamples 3\n"
                  "0\tdata.mdb\t16\t100\n1\tsub/rows.bin\t0\t10\n2\tdata.mdb\t500\t7\n");
    layout::Ranges back;
    REQUIRE(layout::parse_ranges(text, back) == "");
    CHECK(back.files == r.files);
    REQUIRE(back.entries.size() == 3);
    CHECK(back.entries[2].offset == 500);
    CHECK(back.entries[2].length == 7);
    CHECK(back.entries[2].file == 0);
    std::string crlf = "clairfs-ranges 1\r\n\r\n# c\r\nsamples 1\r\n0\ta\t1\t2\r\n";
    REQUIRE(layout::parse_ranges(crlf, back) == "");
    CHECK(back.entries.size() == 1);
}

// clairfs ranges writes a manifest in pieces (14.2M samples are 515 MB of
// text): the pieces are the whole text, in order, and a write that fails
// ends the writing there.
TEST_CASE("format_ranges in pieces gives the same text, and stops at a failed write") {
    layout::Ranges r;
    for (uint64_t i = 0; i < 200'000; ++i) layout::add_range(r, "train/data.bin", i * 4096, 4096);
    const std::string whole = layout::format_ranges(r, "a test");
    std::string joined;
    size_t pieces = 0;
    CHECK(layout::format_ranges(r, "a test", [&](std::string_view piece) {
        ++pieces;
        joined += piece;
        return true;
    }));
    CHECK(pieces > 2); // ~6 MB in pieces of about 1 MiB
    CHECK(joined == whole);
    size_t calls = 0;
    CHECK_FALSE(layout::format_ranges(r, "", [&](std::string_view) { return ++calls < 2; }));
    CHECK(calls == 2);
}

TEST_CASE("parse_ranges names the line and the reason") {
    layout::Ranges r;
    auto why = [&](std::string_view text) { return layout::parse_ranges(text, r); };
    CHECK(why("") == "the manifest is empty");
    CHECK(why("a\t0\t1\n").starts_with("line 1: expected 'clairfs-ranges 1'"));
    CHECK(why("clairfs-ranges 1\n0\ta\t0\t1\n") ==
          "line 2: expected 'samples N' before the entries");
    CHECK(why("clairfs-ranges 1\nsamples 0\n") == "line 2: a dataset needs at least one sample");
    CHECK(why(manifest("0\ta\t0\t1\n", 2)) ==
          "the manifest declares 2 samples but has 1 entries (truncated?)");
    CHECK(why(manifest("0\ta\t0\t1\n1\ta\t1\t1\n", 1)) ==
          "line 4: more entries than the 1 samples the manifest declares");
    CHECK(why(manifest("1\ta\t0\t1\n", 1)).starts_with("line 3: sample 1 where sample 0 was expected"));
    CHECK(why(manifest("0\ta\t0\t1\n0\ta\t1\t1\n", 2))
              .starts_with("line 4: sample 0 where sample 1 was expected"));
    CHECK(why(manifest("0\ta 0 1\n", 1)) ==
          "line 3: expected INDEX, PATH, OFFSET and LENGTH separated by tabs");
    CHECK(why(manifest("0\ta\t0\t1\t9\n", 1)) == "line 3: more than four tab-separated fields");
    CHECK(why(manifest("0\t/abs\t0\t1\n", 1)) ==
          "line 3: absolute path; paths are relative to the dataset root");
    CHECK(why(manifest("0\ta/../b\t0\t1\n", 1)) ==
          "line 3: path 'a/../b' has an empty, '.' or '..' component");
    CHECK(why(manifest("0\ta\t-1\t1\n", 1)) == "line 3: OFFSET '-1' is not a whole number");
    CHECK(why(manifest("0\ta\t0\tx\n", 1)) == "line 3: LENGTH 'x' is not a whole number");
    CHECK(why(manifest("0\ta\t0\t0\n", 1)) == "line 3: sample 0 is empty");
    CHECK(why(manifest("0\ta\t0\t4294967296\n", 1)) ==
          "line 3: sample 0 is 4 GiB or longer; clairfs takes samples below 4 GiB");
    CHECK(why(manifest("0\ta\t18446744073709551615\t2\n", 1)) ==
          "line 3: OFFSET + LENGTH overflows");
}

TEST_CASE("ranges builds samples that name their files and byte ranges") {
    RangesTree t;
    layout::Dataset ds;
    REQUIRE(t.build(manifest("0\tdata.mdb\t100\t50\n1\tsub/rows.bin\t0\t200\n"
                             "2\tdata.mdb\t0\t100\n3\tlink.bin\t200\t100\n",
                             4),
                    ds) == "");
    REQUIRE(ds.ranges.size() == 4);
    REQUIRE(ds.samples.size() == 4);
    index::NodeId mdb = t.idx.id_of(*t.idx.find("data.mdb"));
    index::NodeId rows = t.idx.id_of(*t.idx.find("sub/rows.bin"));
    CHECK(ds.ranges[0].node == mdb);
    CHECK(ds.ranges[0].offset == 100);
    CHECK(ds.ranges[0].length == 50);
    CHECK(ds.ranges[1].node == rows);
    CHECK(ds.ranges[3].node == rows); // the symlink, followed
    CHECK(paths_of(t.idx, ds) ==
          std::vector<std::string>{"data.mdb", "sub/rows.bin", "data.mdb", "link.bin"});
}

TEST_CASE("ranges refuses a manifest that does not fit the files") {
    RangesTree t;
    layout::Dataset ds;
    auto one = [&](std::string_view line) { return t.build(manifest(line, 1), ds); };
    CHECK(one("0\tmissing.bin\t0\t1\n").starts_with("manifest file 'missing.bin': "));
    CHECK(one("0\tsub/dir\t0\t1\n") == "manifest file 'sub/dir' is not a regular file");
    CHECK(one("0\tdata.mdb/x\t0\t1\n").starts_with("manifest file 'data.mdb/x': "));
    CHECK(one("0\tdata.mdb\t990\t11\n") ==
          "manifest sample 0 [990, 1001) ends past the end of 'data.mdb' (1000 bytes): was the "
          "manifest written for other data?");
    CHECK(one("0\tdata.mdb\t990\t10\n") == "");
    CHECK(t.build(manifest("0\tdata.mdb\t0\t100\n1\tsub/rows.bin\t0\t10\n2\tdata.mdb\t99\t5\n", 3),
                  ds) ==
          "manifest samples 0 and 2 overlap in 'data.mdb' ([0, 100) and [99, 104)): a READ's "
          "offset must name one sample");
    // Adjacent is not overlapping.
    CHECK(t.build(manifest("0\tdata.mdb\t0\t100\n1\tdata.mdb\t100\t5\n", 2), ds) == "");
    CHECK(t.build("clairfs-ranges 1\nsamples 1\n", ds) ==
          "the manifest declares 1 samples but has 0 entries (truncated?)");
}
