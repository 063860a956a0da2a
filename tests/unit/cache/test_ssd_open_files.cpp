// SPDX-License-Identifier: MIT
// The SSD tier's kept entry files (SsdOptions::open_files): an entry the
// kernel reads keeps its file open, up to the limit, so its later opens,
// read-aheads and drops cost no open by name; the file closes when its
// entry goes; and a kept file written to in place, or replaced by hand
// (the unlink moves the old inode's change time), is not handed over again.
#include "clairfs/cache/ssd_tier.hpp"
#include "ssd_fixtures.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace clairfs;
namespace fs = std::filesystem;
using test::CacheDir, test::Table, test::options, test::MiB, test::read_fd,
    test::entry_file_of_size;

namespace {

// This process's descriptors open on a file in `dir`.
size_t open_in(const std::string& dir) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        fs::path target = fs::read_symlink(e.path(), ec);
        if (!ec && target.string().starts_with(dir + "/")) ++n;
    }
    return n;
}

// `path` replaced (renamed over) by a new file of `bytes`.
void replace_file(const std::string& path, const std::string& bytes) {
    std::string tmp = path + ".new";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    REQUIRE(std::fclose(f) == 0);
    REQUIRE(::rename(tmp.c_str(), path.c_str()) == 0);
}

} // namespace

TEST_CASE("entry files the kernel reads stay open up to the limit and close with their entry") {
    CacheDir d;
    Table t({110 * 1000, 70 * 1000, 50 * 1000});
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = true;
    o.open_files = 2;
    auto ssd = cache::SsdTier::open(o);
    for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    const std::string dir = ssd->state().entries_dir;
    CHECK(ssd->state().open_files == 0);
    CHECK(open_in(dir) == 0);

    for (index::NodeId id = 0; id < 3; ++id) {
        int fd = ssd->open_for_kernel(id);
        REQUIRE(fd >= 0);
        CHECK(read_fd(fd) == t.bytes(id)); // the caller's own descriptor
        ::close(fd);
    }
    CHECK(ssd->state().open_files == 2); // the third found no room
    CHECK(open_in(dir) == 2);
    // Kept or not, read-ahead and drop-behind work, and open nothing more.
    for (index::NodeId id = 0; id < 3; ++id) {
        CHECK(ssd->read_ahead(id) == 0);
        CHECK(ssd->drop_pages(id) == 0);
    }
    CHECK(open_in(dir) == 2);
    // A second open of a kept entry is handed the same checked bytes.
    int again = ssd->open_for_kernel(0);
    REQUIRE(again >= 0);
    CHECK(read_fd(again) == t.bytes(0));
    ::close(again);

    // Evicted: its kept file closes (after the tier's lock); the room goes
    // to the next entry opened for the kernel.
    CHECK(ssd->evict(0) == 110 * 1000);
    CHECK(ssd->state().open_files == 1);
    CHECK(open_in(dir) == 1);
    int fd = ssd->open_for_kernel(2);
    REQUIRE(fd >= 0);
    ::close(fd);
    CHECK(ssd->state().open_files == 2);
    CHECK(ssd->open_for_kernel(0) == -ENOENT);

    ssd.reset();
    CHECK(open_in(dir) == 0);
}

TEST_CASE("a kept entry file written in place or replaced by hand is not handed over again") {
    CacheDir d;
    Table t({110 * 1000, 70 * 1000});
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = true;
    o.open_files = 8;
    auto ssd = cache::SsdTier::open(o);
    for (index::NodeId id = 0; id < 2; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    for (index::NodeId id = 0; id < 2; ++id) {
        int fd = ssd->open_for_kernel(id);
        REQUIRE(fd >= 0);
        ::close(fd);
    }
    REQUIRE(ssd->state().open_files == 2);
    ::usleep(20'000); // past the file system's timestamp granularity

    // Entry 0 written in place through another descriptor: its kept file
    // shows the change.
    std::string path0 = entry_file_of_size(*ssd, 110 * 1000);
    REQUIRE(!path0.empty());
    {
        int raw = ::open(path0.c_str(), O_WRONLY);
        REQUIRE(raw >= 0);
        std::string junk(4096, 'x');
        REQUIRE(::pwrite(raw, junk.data(), junk.size(), 4096) == 4096);
        ::close(raw);
    }
    CHECK(ssd->open_for_kernel(0) == -EAGAIN);
    CHECK_FALSE(ssd->verified(0));
    CHECK(ssd->get(0) == nullptr); // the daemon's read finds the mismatch
    CHECK(ssd->state().errors == 1);

    // Entry 1 replaced by a file of other bytes: the rename that unlinked
    // the checked inode moved its change time, so its kept file is let go;
    // the name leads to a file nobody checked, which the daemon's read
    // finds wrong and drops.
    std::string path1 = entry_file_of_size(*ssd, 70 * 1000);
    REQUIRE(!path1.empty());
    replace_file(path1, std::string(70 * 1000, 'y'));
    CHECK(ssd->open_for_kernel(1) == -EAGAIN);
    CHECK(ssd->state().open_files == 0); // both let go
    CHECK(ssd->open_for_kernel(1) == -EAGAIN); // by name now: not verified
    CHECK(ssd->get(1) == nullptr);
    CHECK_FALSE(ssd->contains(1));
    CHECK(ssd->open_for_kernel(1) == -ENOENT);
    CHECK(ssd->state().errors == 2);
    CHECK(ssd->state().enabled);
}

TEST_CASE("an entry file replaced by the same bytes is handed over again once checked by name") {
    CacheDir d;
    Table t({90 * 1000});
    cache::SsdOptions o = options(d.path, MiB, t);
    o.open_files = 4; // resident: handed over while its checked pages stay
    auto ssd = cache::SsdTier::open(o);
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->warm(0) != nullptr);
    int fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    ::close(fd);
    REQUIRE(ssd->state().open_files == 1);

    std::string path = entry_file_of_size(*ssd, 90 * 1000);
    REQUIRE(!path.empty());
    replace_file(path, t.bytes(0));
    // The daemon checks the new file by name (its pages now the cached,
    // checked ones); the kept old inode is not the checked file any more.
    REQUIRE(ssd->warm(0) != nullptr);
    CHECK(ssd->open_for_kernel(0) == -EAGAIN);
    CHECK(ssd->state().open_files == 0);
    REQUIRE(ssd->warm(0) != nullptr);
    fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == t.bytes(0));
    ::close(fd);
    CHECK(ssd->state().open_files == 1);
    CHECK(ssd->state().errors == 0);
}
