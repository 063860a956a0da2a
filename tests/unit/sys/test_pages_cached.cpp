// SPDX-License-Identifier: MIT
// sys::all_pages_cached, and its mincore fallback: a file just read is all
// in the page cache; one whose clean pages were dropped is not; a bad
// descriptor is an errno, not an answer. The SSD tier hands an entry to the
// kernel on this answer, so a wrong "yes" would let unchecked bytes out.
#include "clairfs/sys/syscalls.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

using namespace clairfs;

namespace {

// In the working directory (the build tree): /tmp may be a tmpfs, whose
// pages never leave.
struct ScratchFile {
    std::string path = "pages-cached-test." + std::to_string(::getpid());
    int fd = -1;
    ScratchFile(size_t size) {
        fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        REQUIRE(fd >= 0);
        std::vector<char> bytes(size, 'x');
        REQUIRE(::write(fd, bytes.data(), size) == static_cast<ssize_t>(size));
        REQUIRE(::fsync(fd) == 0); // clean pages, so that DONTNEED drops them
    }
    ~ScratchFile() {
        ::close(fd);
        ::unlink(path.c_str());
    }
    void read_all() const {
        std::vector<char> buf(1 << 16);
        for (off_t off = 0; ::pread(fd, buf.data(), buf.size(), off) > 0;)
            off += static_cast<off_t>(buf.size());
    }
    bool pages_can_leave() const {
        struct statfs sf{};
        REQUIRE(::fstatfs(fd, &sf) == 0);
        return sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC;
    }
};

} // namespace

TEST_CASE("all_pages_cached: resident, dropped, empty, bad descriptor") {
    for (auto* probe : {&sys::all_pages_cached, &sys::all_pages_cached_by_mincore}) {
        const bool fallback = probe == &sys::all_pages_cached_by_mincore;
        CAPTURE(fallback);
        ScratchFile f(300 * 1024 + 123); // a partial last page
        f.read_all();
        CHECK((*probe)(f.fd, 300 * 1024 + 123) == 1);
        CHECK((*probe)(f.fd, 0) == 1);
        if (f.pages_can_leave()) {
            REQUIRE(::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
            CHECK((*probe)(f.fd, 300 * 1024 + 123) == 0);
            f.read_all();
            CHECK((*probe)(f.fd, 300 * 1024 + 123) == 1);
            // One page gone in the middle is enough for "no".
            REQUIRE(::posix_fadvise(f.fd, 100 * 1024, 4096, POSIX_FADV_DONTNEED) == 0);
            CHECK((*probe)(f.fd, 300 * 1024 + 123) == 0);
        } else {
            MESSAGE("the working directory is a tmpfs: the eviction cases are not reachable here");
        }
        CHECK((*probe)(-1, 4096) < 0);
    }
}
