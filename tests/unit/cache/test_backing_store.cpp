// SPDX-License-Identifier: MIT
// The backing store against a real temporary directory: bytes, the snapshot
// check (size and mtime against the scan) and what it counts.
#include "clairfs/cache/backing_store.hpp"
#include "clairfs/index/scanner.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "dataset.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>

using namespace clairfs;

namespace {

void set_mtime(const test::fs::path& p, time_t sec, long nsec = 0) {
    struct timespec times[2] = {{0, UTIME_OMIT}, {sec, nsec}};
    REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

} // namespace

TEST_CASE("read_whole returns each file's bytes and counts them") {
    test::Dataset d(12, /*with_empty=*/true);
    d.contents[11] = test::sample_bytes(11, 3 << 20); // larger than one FUSE read
    d.rewrite(11, d.contents[11]);
    d.rescan();

    cache::BackingStore store(d.idx, d.root_fd);
    uint64_t total = 0, nonempty = 0;
    for (size_t i = 0; i < d.contents.size(); ++i) {
        cache::BlobRef b;
        REQUIRE(store.read_whole(d.id(i), b) == 0);
        CHECK(b->size == d.contents[i].size());
        CHECK(test::view(b) == d.contents[i]);
        total += d.contents[i].size();
        nonempty += !d.contents[i].empty();
    }
    auto s = store.stats();
    CHECK(s.files == d.contents.size());
    CHECK(s.bytes == total);
    CHECK(s.reads == nonempty); // one request per file; the empty one reads nothing
    CHECK(s.errors == 0);
    CHECK(s.stale == 0);
}

TEST_CASE("an empty file is a valid empty blob") {
    test::Dataset d(1, /*with_empty=*/true);
    cache::BackingStore store(d.idx, d.root_fd);
    cache::BlobRef b;
    REQUIRE(store.read_whole(d.id(0), b) == 0);
    REQUIRE(b);
    CHECK(b->size == 0);
    CHECK(store.stats().files == 1);
    CHECK(store.stats().reads == 0);
}

TEST_CASE("read_at reads a range, stops at end of file, and counts") {
    test::Dataset d(2);
    cache::BackingStore store(d.idx, d.root_fd);
    const std::string& want = d.contents[1];
    REQUIRE(want.size() > 100);
    int fd = store.open_verified(d.node(1));
    REQUIRE(fd >= 0);

    std::string buf(50, '\0');
    CHECK(store.read_at(fd, buf.data(), 50, 30) == 50);
    CHECK(buf == want.substr(30, 50));

    std::string tail(200, '\0');
    off_t off = static_cast<off_t>(want.size() - 20);
    CHECK(store.read_at(fd, tail.data(), 200, off) == 20);
    CHECK(tail.substr(0, 20) == want.substr(want.size() - 20));
    CHECK(store.read_at(fd, tail.data(), 200, static_cast<off_t>(want.size()) + 5) == 0);
    sys::close(fd);

    auto s = store.stats();
    CHECK(s.reads == 3);
    CHECK(s.bytes == 70);
    CHECK(s.errors == 0);

    CHECK(store.read_at(-1, buf.data(), 10, 0) == -EBADF);
    CHECK(store.stats().errors == 1);
    CHECK(store.stats().reads == 3);
}

TEST_CASE("a file rewritten with another size is refused with ESTALE") {
    test::Dataset d(3);
    cache::BackingStore store(d.idx, d.root_fd);
    d.rewrite(1, test::sample_bytes(1, d.contents[1].size() + 1));
    // Put the scanned mtime back, so only the size gives the change away.
    set_mtime(d.path(1), d.node(1).mtime_sec, d.node(1).mtime_nsec);

    cache::BlobRef b = cache::Blob::make(3);
    const cache::BlobRef before = b;
    CHECK(store.read_whole(d.id(1), b) == -ESTALE);
    CHECK(b == before); // untouched on error
    CHECK(store.open_verified(d.node(1)) == -ESTALE);

    cache::BlobRef other;
    CHECK(store.read_whole(d.id(2), other) == 0); // the rest still reads
    auto s = store.stats();
    CHECK(s.stale == 2);
    CHECK(s.errors == 0);
    CHECK(s.files == 1);
}

TEST_CASE("a file whose mtime moved is refused with ESTALE even at the same size") {
    test::Dataset d(2);
    cache::BackingStore store(d.idx, d.root_fd);
    d.rewrite(0, test::sample_bytes(77, d.contents[0].size()));
    set_mtime(d.path(0), 1000000000);
    cache::BlobRef b;
    CHECK(store.read_whole(d.id(0), b) == -ESTALE);
    CHECK(b == nullptr);
    CHECK(store.stats().stale == 1);

    // Touching alone (same bytes, same size) is a change too: the scan's
    // mtime is what the kernel was told.
    set_mtime(d.path(1), 1000000000);
    CHECK(store.read_whole(d.id(1), b) == -ESTALE);
    CHECK(store.stats().stale == 2);
}

TEST_CASE("a file deleted after the scan is ENOENT and counted as an error") {
    test::Dataset d(2);
    cache::BackingStore store(d.idx, d.root_fd);
    test::fs::remove(d.path(0));
    cache::BlobRef b;
    CHECK(store.read_whole(d.id(0), b) == -ENOENT);
    CHECK(b == nullptr);
    CHECK(store.open_verified(d.node(0)) == -ENOENT);
    auto s = store.stats();
    CHECK(s.errors == 2);
    CHECK(s.stale == 0);
    CHECK(s.files == 0);
    CHECK(s.reads == 0);
}

TEST_CASE("the backing store does not follow a symlink swapped in after the scan") {
    test::Dataset d(1);
    cache::BackingStore store(d.idx, d.root_fd);
    test::fs::remove(d.path(0));
    test::fs::create_symlink("/etc/hostname", d.path(0));
    cache::BlobRef b;
    int rv = store.read_whole(d.id(0), b);
    CHECK(rv < 0);
    CHECK(b == nullptr);
}

TEST_CASE("a file that ends before the size the scan saw is ESTALE") {
    // sysfs attributes claim 4096 bytes and hold a few: the one real file
    // system at hand whose reads end early while fstat agrees with the scan.
    // Every Linux with sysfs has the CPU attributes (drivers/base/cpu.c);
    // a machine without /sys cannot run clairfs's tests, so this fails there.
    const char* dir = "/sys/devices/system/cpu";
    int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE_MESSAGE(fd >= 0, "cannot open ", dir, " (is sysfs mounted on /sys?)");
    index::RawTree tree;
    index::ScanReport report;
    REQUIRE(index::scan(fd, dir, {1, index::Progress::never}, tree, report) == 0);
    index::Index idx = index::Index::build(std::move(tree));
    const index::Node* n = idx.find("possible");
    REQUIRE_MESSAGE(n != nullptr, dir, "/possible is missing");
    REQUIRE_MESSAGE(n->size == 4096, dir, "/possible is ", n->size, " bytes, not a sysfs attribute");
    cache::BackingStore store(idx, fd);
    cache::BlobRef b;
    CHECK(store.read_whole(idx.id_of(*n), b) == -ESTALE);
    CHECK(b == nullptr);
    auto s = store.stats();
    CHECK(s.reads == 1); // refused after reading, not by the fstat check
    CHECK(s.stale == 1);
    CHECK(s.files == 0);
    CHECK(s.errors == 0);
    ::close(fd);
}
