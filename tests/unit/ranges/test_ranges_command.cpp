// SPDX-License-Identifier: MIT
// `clairfs ranges` end to end on packed files: the manifest it writes parses,
// names the file relative to the root, and appears whole; bad requests exit
// 2 and unreadable files 1.
#include "clairfs/cli/commands.hpp"
#include "clairfs/layout/ranges_manifest.hpp"
#include "ranges_fixtures.hpp"

using namespace clairfs;
using namespace clairfs::test;
using cli::ranges_command;

namespace {

struct Dataset {
    DiskTree t;
    fs::path data = t.root / "sub" / "data.bin";
    fs::path out = t.root / "out" / "manifest.txt";

    Dataset() {
        write_bytes(data, std::string(8 + 5 * 10, 'r'));
        fs::create_directories(out.parent_path());
    }
    std::string manifest() const {
        std::ifstream in(out, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    layout::Ranges parsed() const {
        layout::Ranges r;
        REQUIRE(layout::parse_ranges(manifest(), r) == "");
        return r;
    }
};

} // namespace

TEST_CASE("ranges packed writes a manifest relative to the file's directory") {
    Dataset d;
    REQUIRE(ranges_command({"packed", d.data.string(), "--record-size", "10", "--header", "8",
                            "--out", d.out.string()}) == cli::exit_ok);
    layout::Ranges r = d.parsed();
    CHECK(r.files == std::vector<std::string>{"data.bin"});
    REQUIRE(r.entries.size() == 5);
    CHECK(r.entries[4].offset == 48);
    CHECK(r.entries[4].length == 10);
    CHECK(d.manifest().find("# written by: clairfs ranges packed " + d.data.string() +
                            " --record-size 10 --header 8 --root " +
                            d.data.parent_path().string() + "\n") != std::string::npos);
    // Only the manifest: the temporary file it was written as is gone.
    CHECK(std::distance(fs::directory_iterator(d.out.parent_path()), {}) == 1);
}

TEST_CASE("ranges --root: paths below it, files outside refused, symlinks keep their name") {
    Dataset d;
    REQUIRE(ranges_command({"packed", d.data.string(), "--record-size", "58", "--root",
                            d.t.root.string(), "--out", d.out.string()}) == cli::exit_ok);
    CHECK(d.parsed().files == std::vector<std::string>{"sub/data.bin"});

    d.t.link("alias.bin", "sub/data.bin");
    REQUIRE(ranges_command({"packed", (d.t.root / "alias.bin").string(), "--record-size", "58",
                            "--out", d.out.string()}) == cli::exit_ok);
    CHECK(d.parsed().files == std::vector<std::string>{"alias.bin"});

    CHECK(ranges_command({"packed", d.data.string(), "--record-size", "58", "--root",
                          (d.t.root / "out").string()}) == cli::exit_usage);
    write_bytes(d.t.root / "tab\there.bin", "x");
    CHECK(ranges_command({"packed", (d.t.root / "tab\there.bin").string(), "--record-size",
                          "1"}) == cli::exit_usage);
}

TEST_CASE("ranges: bad requests exit 2, unreadable files 1, and no manifest is left") {
    Dataset d;
    std::string data = d.data.string();
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {},
             {"tar", data},
             {"packed", data},
             {"packed", data, "--record-size", "10", "--offsets", "i.npy"},
             {"packed", data, "--offsets", "i.npy", "--header", "8"},
             {"packed", data, "--record-size", "0"},
             {"packed", data, "--record-size", "ten"},
             {"packed", data, "--record-size"},
             {"packed", data, "--record-size", "10", "--record-size", "10"},
             {"packed", data, "--dataset", "x"},
             {"packed", data, data, "--record-size", "10"},
             {"packed", data, "--bogus"},
             {"hdf5", data},
             {"lmdb"},
             {"packed", data, "--record-size", "7", "--out", d.out.string()}, // remainder
         }) {
        CAPTURE(args);
        CHECK(ranges_command(args) == cli::exit_usage);
    }
    CHECK(ranges_command({"packed", (d.t.root / "absent.bin").string(), "--record-size", "1"}) ==
          cli::exit_failure);
    CHECK(ranges_command({"packed", data, "--record-size", "1", "--out",
                          (d.t.root / "absent" / "m.txt").string()}) == cli::exit_failure);
    CHECK_FALSE(fs::exists(d.out));
}

TEST_CASE("ranges --help, for the command and for each kind") {
    CHECK(ranges_command({"--help"}) == cli::exit_ok);
    for (const char* kind : {"lmdb", "hdf5", "packed"})
        CHECK(ranges_command({kind, "--help"}) == cli::exit_ok);
}
