// SPDX-License-Identifier: MIT
// The SSD tier on file systems the tests mount, hence root only (this
// binary's main exits 77 without root): a full file system gives a disabled
// tier and no partial cache file; ramfs, which refuses O_DIRECT, gives a
// buffered tier. Where root is, every step that fails fails the test.
#include "ssd_fixtures.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>
#include <sys/mount.h>

using namespace clairfs;
namespace fs = std::filesystem;
using test::CacheDir, test::Table, test::options, test::check_disabled, test::MiB;

namespace {

// Runs a shell command; a failure ends the test case with its output.
void require_ok(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    REQUIRE_MESSAGE(p != nullptr, cmd, ": popen: ", std::strerror(errno));
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int status = ::pclose(p);
    REQUIRE_MESSAGE(status == 0, cmd, " failed (status ", status, "): ", out);
}

// Detaches a mount the test made even when a REQUIRE ends the case early.
struct Unmount {
    fs::path mnt;
    ~Unmount() { ::umount2(mnt.c_str(), MNT_DETACH); }
};

} // namespace

TEST_CASE("a full file system gives a disabled tier and keeps no partial cache file") {
    CacheDir d;
    fs::path img = d.path / "small.img", mnt = d.path / "mnt";
    fs::create_directory(mnt);
    require_ok("truncate -s 8M " + img.string());
    require_ok("mkfs.ext4 -q -F " + img.string());
    require_ok("mount -o loop " + img.string() + " " + mnt.string());
    Unmount unmount{mnt};
    Table t({1});
    {
        auto ssd = cache::SsdTier::open(options(mnt, 64 * MiB, t));
        check_disabled(*ssd, "ssd tier disabled: cannot preallocate 64.0 MiB in " + mnt.string() +
                                 ": No space left on device");
        size_t left = 0;
        for (const auto& e : fs::directory_iterator(mnt)) left += e.path().extension() == ".cache";
        CHECK(left == 0);
        // The same file system takes a cache that fits.
        auto small = cache::SsdTier::open(options(mnt, 2 * MiB, t));
        CHECK(small->state().enabled);
    }
    CHECK(::umount2(mnt.c_str(), MNT_DETACH) == 0);
}

TEST_CASE("without O_DIRECT (ramfs) the tier uses buffered I/O and says so") {
    CacheDir d;
    fs::path mnt = d.path / "ramfs";
    fs::create_directory(mnt);
    REQUIRE_MESSAGE(::mount("ramfs", mnt.c_str(), "ramfs", 0, nullptr) == 0,
                    "mount -t ramfs: ", std::strerror(errno));
    Unmount unmount{mnt};
    {
        Table t({5000, 3 * MiB});
        {
            auto ssd = cache::SsdTier::open(options(mnt, 4 * MiB, t));
            REQUIRE(ssd->state().enabled);
            CHECK_FALSE(ssd->state().direct);
            for (index::NodeId id = 0; id < 2; ++id) {
                REQUIRE(ssd->put(id, t.blob(id)));
                CHECK(test::view(ssd->get(id)) == t.bytes(id));
            }
        }
        auto again = cache::SsdTier::open(options(mnt, 4 * MiB, t));
        CHECK(again->state().reused == 2);
        CHECK(test::view(again->get(1)) == t.bytes(1));
    }
    CHECK(::umount2(mnt.c_str(), MNT_DETACH) == 0);
}
