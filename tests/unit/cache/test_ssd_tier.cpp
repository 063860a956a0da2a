// SPDX-License-Identifier: MIT
// The SSD tier on a real directory on local disk: bytes round-trip exactly,
// the budget is hard, a read racing an evict and a put into the same space
// never returns another file's bytes, a corrupt entry is never served, a
// remount reuses exactly the unchanged files, and every environment failure
// gives a disabled tier with a one-line reason instead of an exception.
#include "cache/aio_file.hpp"
#include "cache/aio_transfer.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "ssd_fixtures.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace clairfs;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using test::CacheDir, test::Table, test::options, test::check_disabled, test::K4, test::MiB,
    test::read_fd, test::entry_file_of_size;

namespace {

// A device that fails on demand, as a dying disk would.
class FaultyDevice final : public cache::BlockDevice {
public:
    struct Faults {
        std::atomic<int> read{0}, write{0}; // -errno to return, 0 to pass
    };
    FaultyDevice(std::unique_ptr<cache::BlockDevice> inner, Faults& f)
        : inner_(std::move(inner)), f_(f) {}
    int read(char* buf, size_t len, uint64_t off) override {
        int e = f_.read.load();
        return e ? e : inner_->read(buf, len, off);
    }
    int write(const char* buf, size_t len, uint64_t off) override {
        int e = f_.write.load();
        return e ? e : inner_->write(buf, len, off);
    }
    int sync() override { return inner_->sync(); }

private:
    std::unique_ptr<cache::BlockDevice> inner_;
    Faults& f_;
};

} // namespace

TEST_CASE("bytes round-trip exactly for sizes around the 4 KiB block") {
    CacheDir d;
    Table t({0, 1, 4095, 4096, 4097, 110 * 1000, 3 * MiB});
    auto ssd = cache::SsdTier::open(options(d.path, 16 * MiB, t));
    REQUIRE(ssd->state().enabled);
    CHECK(ssd->state().direct); // /var/tmp is on a disk file system
    CHECK(std::string(ssd->name()) == "ssd");
    uint64_t total = 0;
    for (index::NodeId id = 0; id < t.files.size(); ++id) {
        CHECK(ssd->put(id, t.blob(id)));
        total += t.files[id].size;
    }
    for (index::NodeId id = 0; id < t.files.size(); ++id) {
        CAPTURE(t.files[id].size);
        CHECK(ssd->contains(id));
        cache::BlobRef b = ssd->get(id);
        CHECK(test::view(b) == t.bytes(id));
        CHECK(reinterpret_cast<uintptr_t>(b->bytes.get()) % K4 == 0);
        CHECK(test::view(ssd->peek(id)) == t.bytes(id));
    }
    auto s = ssd->stats();
    CHECK(s.bytes == total);
    CHECK(s.entries == 7);
    CHECK(s.hits == 7);
    CHECK(s.misses == 0);
    auto st = ssd->state();
    CHECK(st.writes == 7);
    CHECK(st.bytes_written == total);
    CHECK(st.reads == 14);
    CHECK(st.errors == 0);
    CHECK(st.allocated == (3 + 2 + 27 + 768) * K4); // 1, 4095, 4096 | 4097 | 110 kB | 3 MiB
}

TEST_CASE("the reserve, entries and journal are named by the dataset, preallocated and private") {
    CacheDir d;
    Table t({100});
    auto a = cache::SsdTier::open(options(d.path, 1 * MiB, t));
    auto o = options(d.path, 2 * MiB, t);
    o.dataset = "/datasets/other/";
    auto b = cache::SsdTier::open(o);
    REQUIRE(a->state().enabled);
    REQUIRE(b->state().enabled);
    CHECK(d.count(".cache") == 2);
    CHECK(d.count(".cache.d") == 2);
    CHECK(d.count(".journal") == 2);
    CHECK(a->state().entries_dir == a->state().cache_file + ".d");
    std::string name = fs::path(a->state().cache_file).filename().string();
    CHECK(name.size() == std::string("clairfs-0123456789abcdef.cache").size());
    CHECK(name.starts_with("clairfs-"));
    CHECK(name == cache::cache_file_stem("/datasets/imagenet") + ".cache");
    // Spelled differently, the same root names the same file.
    CHECK(cache::cache_file_stem("/datasets//imagenet/") ==
          cache::cache_file_stem("/datasets/imagenet"));
    for (const auto& e : fs::directory_iterator(d.path)) {
        struct stat st;
        REQUIRE(::stat(e.path().c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == (S_ISDIR(st.st_mode) ? 0700 : 0600));
    }
    struct stat st;
    REQUIRE(::stat(a->state().cache_file.c_str(), &st) == 0);
    CHECK(st.st_size == static_cast<off_t>(MiB));
    CHECK(static_cast<uint64_t>(st.st_blocks) * 512 >= MiB); // allocated, not sparse
}

TEST_CASE("put refuses what does not fit and never evicts") {
    CacheDir d;
    Table t({40 * 1024, 30 * 1024, 24 * 1024, 1, 100 * 1024});
    auto ssd = cache::SsdTier::open(options(d.path, 64 * 1024, t));
    CHECK(ssd->put(0, t.blob(0)));       // 10 blocks
    CHECK_FALSE(ssd->put(1, t.blob(1))); // 8 blocks, 6 free
    CHECK(ssd->put(2, t.blob(2)));       // exactly the 6 left
    CHECK_FALSE(ssd->put(3, t.blob(3))); // one byte takes a block
    CHECK_FALSE(ssd->put(4, t.blob(4))); // larger than the whole file
    CHECK_FALSE(ssd->put(1, nullptr));
    auto s = ssd->stats();
    CHECK(s.rejected == 3);
    CHECK(s.evictions == 0);
    CHECK(s.bytes == 64 * 1024);
    CHECK(s.capacity == 64 * 1024);
    CHECK(ssd->contains(0));
    CHECK(ssd->contains(2));
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
}

TEST_CASE("room is counted in whole blocks: bytes free is not room free") {
    CacheDir d;
    Table t({4097, 1});
    auto ssd = cache::SsdTier::open(options(d.path, 2 * K4, t));
    CHECK(ssd->put(0, t.blob(0)));
    CHECK(ssd->stats().bytes == 4097);
    CHECK_FALSE(ssd->put(1, t.blob(1))); // 4095 bytes unused, no block free
    CHECK(ssd->state().allocated == 2 * K4);
    CHECK(ssd->state().largest_free == 0);
}

TEST_CASE("evict frees room that a later put reuses") {
    CacheDir d;
    Table t({16 * 1024, 16 * 1024, 5000});
    auto ssd = cache::SsdTier::open(options(d.path, 16 * 1024, t));
    REQUIRE(ssd->put(0, t.blob(0)));
    CHECK_FALSE(ssd->put(1, t.blob(1)));
    CHECK(ssd->evict(0) == 16 * 1024);
    CHECK(ssd->evict(0) == 0);
    CHECK(ssd->evict(2) == 0);
    CHECK_FALSE(ssd->contains(0));
    CHECK(ssd->get(0) == nullptr);
    REQUIRE(ssd->put(1, t.blob(1)));
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
    auto s = ssd->stats();
    CHECK(s.bytes == 16 * 1024);
    CHECK(s.entries == 1);
    CHECK(s.evictions == 1);
    CHECK(s.rejected == 1);
    CHECK(s.misses == 1);
}

TEST_CASE("get counts hits and misses; peek, contains and held count nothing") {
    CacheDir d;
    Table t({10, 20, 30});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(1, t.blob(1)));
    CHECK(ssd->put(1, t.blob(2))); // held already: the old copy stays
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
    CHECK(ssd->get(2) == nullptr);
    CHECK(ssd->peek(0));
    CHECK(ssd->peek(2) == nullptr);
    CHECK_FALSE(ssd->contains(2));
    CHECK_FALSE(ssd->contains(999)); // beyond the node table
    std::vector<index::NodeId> held{77};
    ssd->held(held);
    std::sort(held.begin(), held.end());
    CHECK(held == std::vector<index::NodeId>{0, 1, 77});
    auto s = ssd->stats();
    CHECK(s.hits == 1);
    CHECK(s.misses == 1);
    CHECK(s.entries == 2);
    CHECK(s.bytes == 30);
    CHECK(ssd->state().writes == 2);
}

TEST_CASE("a blob not made by Blob::make is copied for its direct write") {
    CacheDir d;
    Table t({5000});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    auto b = std::make_shared<cache::Blob>();
    b->bytes.reset(static_cast<char*>(std::malloc(5000)));
    std::string want = t.bytes(0);
    std::memcpy(b->bytes.get(), want.data(), 5000);
    b->size = 5000; // capacity 0: no room to write whole blocks from
    REQUIRE(ssd->put(0, b));
    CHECK(test::view(ssd->get(0)) == want);
}

TEST_CASE("a read racing an evict and a put into the same space never returns wrong bytes") {
    CacheDir d;
    // Two extents of room, four files of one size: every put after an evict
    // lands where another file was, unless a reader still holds that space.
    Table t({24 * 1024, 24 * 1024, 24 * 1024, 24 * 1024});
    auto ssd = cache::SsdTier::open(options(d.path, 2 * 24 * 1024, t));
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(1, t.blob(1)));
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> wrong{0}, served{0};
    test::within(60s, "read, evict and put race", [&] {
        std::vector<std::thread> readers;
        for (int r = 0; r < 3; ++r)
            readers.emplace_back([&, r] {
                for (index::NodeId id = static_cast<index::NodeId>(r); !stop.load();
                     id = (id + 1) % 4) {
                    cache::BlobRef b = (id % 2) ? ssd->get(id) : ssd->peek(id);
                    if (!b) continue;
                    served.fetch_add(1);
                    if (std::string_view(b->bytes.get(), b->size) != t.bytes(id))
                        wrong.fetch_add(1);
                }
            });
        for (int round = 0; round < 3000; ++round) {
            index::NodeId out = static_cast<index::NodeId>(round % 4);
            index::NodeId in = static_cast<index::NodeId>((round + 2) % 4);
            ssd->evict(out);
            ssd->put(in, t.blob(in)); // refused while a reader pins the only free extent
        }
        stop = true;
        for (auto& th : readers) th.join();
    });
    CHECK(wrong == 0);
    CHECK(served > 0);
    // A reader that saw another file's bytes would have failed its checksum.
    CHECK(ssd->state().errors == 0);
    CHECK(ssd->state().allocated == ssd->stats().entries * 24 * 1024);
}

TEST_CASE("bytes corrupted on disk are dropped, counted and never served") {
    CacheDir d;
    Table t({8192, 300});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(ssd->put(0, t.blob(0))); // the first extent: offset 0
    REQUIRE(ssd->put(1, t.blob(1)));
    int fd = ::open((ssd->state().entries_dir + "/000000000000").c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, "garbage", 7, 5000) == 7);
    ::close(fd);
    CHECK(ssd->get(0) == nullptr);
    CHECK_FALSE(ssd->contains(0));
    CHECK(ssd->get(0) == nullptr);
    auto st = ssd->state();
    CHECK(st.errors == 1);
    CHECK(st.io_errors == 0);
    CHECK(st.enabled);
    CHECK(st.error.find("checksum") != std::string::npos);
    CHECK(ssd->stats().misses == 2);
    CHECK(ssd->stats().bytes == 300);
    CHECK(test::view(ssd->get(1)) == t.bytes(1)); // its neighbour is intact
    REQUIRE(ssd->put(0, t.blob(0)));              // the space is usable again
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
}

TEST_CASE("a remount over an unchanged dataset reuses every entry without writing") {
    CacheDir d;
    Table t({0, 1, 5000, 110 * 1000, 3 * MiB, 4096});
    {
        auto ssd = cache::SsdTier::open(options(d.path, 8 * MiB, t));
        for (index::NodeId id = 0; id < t.files.size(); ++id) REQUIRE(ssd->put(id, t.blob(id)));
        ssd->evict(5);
    }
    // NodeIds change between mounts: the journal matches by path.
    std::reverse(t.files.begin(), t.files.end()); // file n is now id 5 - n
    auto ssd = cache::SsdTier::open(options(d.path, 8 * MiB, t));
    auto st = ssd->state();
    CHECK(st.reused == 5);
    CHECK(st.invalidated == 0);
    CHECK_FALSE(ssd->contains(0)); // file 5, evicted before the remount
    for (index::NodeId id = 1; id < 6; ++id) {
        CHECK(ssd->contains(id));
        CHECK(test::view(ssd->get(id)) == t.bytes(id));
    }
    st = ssd->state();
    CHECK(st.writes == 0);
    CHECK(st.errors == 0);
    CHECK(ssd->health().reused == 5);
    CHECK(ssd->stats().bytes == 1 + 5000 + 110 * 1000 + 3 * MiB);
}

TEST_CASE("a remount invalidates exactly the files whose size or mtime changed") {
    CacheDir d;
    Table t({1000, 2000, 3000, 4000, 5000});
    {
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        for (index::NodeId id = 0; id < 5; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    }
    t.files[1].mtime_ns += 1; // touched
    t.files[3].size += 1;     // rewritten
    t.files[4].path.clear();  // gone from the dataset
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    auto st = ssd->state();
    CHECK(st.reused == 2);
    CHECK(st.invalidated == 3);
    CHECK(ssd->contains(0));
    CHECK_FALSE(ssd->contains(1));
    CHECK(ssd->contains(2));
    CHECK_FALSE(ssd->contains(3));
    CHECK(test::view(ssd->get(2)) == t.bytes(2));
    // The invalidated extents are free again.
    CHECK(ssd->state().allocated == 4096 + 4096);
    CHECK(ssd->put(1, t.blob(1)));
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
}

TEST_CASE("a remount with another capacity keeps the entries that still fit") {
    CacheDir d;
    Table t({300 * 1024, 300 * 1024, 300 * 1024});
    std::string cache_file;
    {
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
        cache_file = ssd->state().cache_file;
    }
    {
        // Extents are carved from the front: only the first ends below 512 KiB.
        auto ssd = cache::SsdTier::open(options(d.path, 512 * 1024, t));
        CHECK(ssd->state().reused == 1);
        CHECK(ssd->state().discarded == 2);
        CHECK(fs::file_size(cache_file) == 512 * 1024);
        CHECK(test::view(ssd->get(0)) == t.bytes(0));
    }
    auto ssd = cache::SsdTier::open(options(d.path, 2 * MiB, t));
    CHECK(ssd->state().reused == 1);
    CHECK(fs::file_size(cache_file) == 2 * MiB);
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
    CHECK(ssd->put(1, t.blob(1)));
}

TEST_CASE("an entry's file removed between mounts is discarded; a lost reserve costs nothing") {
    CacheDir d;
    Table t({1000, 2000});
    std::string cache_file, entries;
    {
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        REQUIRE(ssd->put(0, t.blob(0)));
        REQUIRE(ssd->put(1, t.blob(1)));
        cache_file = ssd->state().cache_file;
        entries = ssd->state().entries_dir;
    }
    fs::remove(cache_file);
    fs::remove(entries + "/000000000000"); // node 0's, the first extent
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    CHECK(ssd->state().reused == 1);
    CHECK(ssd->state().discarded == 1);
    CHECK_FALSE(ssd->contains(0));
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
    CHECK(ssd->state().errors == 0);
    CHECK(fs::file_size(cache_file) == MiB); // made again
}

TEST_CASE("a journal torn mid-record keeps the entries recorded before the tear") {
    CacheDir d;
    Table t({100, 200, 300});
    std::string journal;
    {
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
        journal = ssd->state().cache_file;
        journal.replace(journal.size() - 6, 6, ".journal");
    }
    fs::resize_file(journal, fs::file_size(journal) - 5);
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    CHECK(ssd->state().reused == 2);
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
    CHECK_FALSE(ssd->contains(2));
    CHECK(ssd->put(2, t.blob(2)));
}

TEST_CASE("after a crash the appended journal restores what was written") {
    CacheDir d;
    Table t({5000, 6000, 7000, 8000});
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // Killed before any clean close: only the appended records remain.
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        bool ok = ssd->put(0, t.blob(0)) && ssd->put(1, t.blob(1)) && ssd->put(2, t.blob(2));
        ok = ok && ssd->evict(1) == 6000 && ssd->put(3, t.blob(3));
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    CHECK(ssd->state().reused == 3);
    CHECK_FALSE(ssd->contains(1));
    for (index::NodeId id : {0u, 2u, 3u}) CHECK(test::view(ssd->get(id)) == t.bytes(id));
    CHECK(ssd->state().errors == 0);
}

TEST_CASE("device errors fail the operation, are counted, and turn the tier off at the limit") {
    CacheDir d;
    Table t({5000, 6000, 7000});
    FaultyDevice::Faults faults;
    auto o = options(d.path, MiB, t);
    o.max_io_errors = 4;
    o.wrap_device = [&](std::unique_ptr<cache::BlockDevice> dev) {
        return std::make_unique<FaultyDevice>(std::move(dev), faults);
    };
    auto ssd = cache::SsdTier::open(o);

    faults.write = -EIO;
    CHECK_FALSE(ssd->put(0, t.blob(0)));
    CHECK_FALSE(ssd->contains(0));
    CHECK(ssd->state().allocated == 0); // the reserved extent went back
    faults.write = -ENOSPC;
    CHECK_FALSE(ssd->put(0, t.blob(0)));
    CHECK(ssd->state().error.find("No space left on device") != std::string::npos);
    faults.write = 0;
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(1, t.blob(1)));

    faults.read = -EIO;
    CHECK(ssd->get(0) == nullptr); // dropped, not retried forever
    CHECK_FALSE(ssd->contains(0));
    faults.read = 0;
    CHECK(test::view(ssd->get(1)) == t.bytes(1));
    auto st = ssd->state();
    CHECK(st.enabled);
    CHECK(st.errors == 3);
    CHECK(st.io_errors == 3);
    CHECK(ssd->health().enabled);
    CHECK(ssd->health().error.empty());

    faults.read = -EIO;
    CHECK(ssd->peek(1) == nullptr); // the fourth
    check_disabled(*ssd, "ssd tier disabled after 4 I/O errors; last: ssd tier: read of");
    CHECK(ssd->stats().bytes == 0);
    CHECK(ssd->stats().entries == 0);
}

TEST_CASE("a missing cache dir gives a disabled tier, not an exception") {
    Table t({1});
    CacheDir d;
    auto ssd = cache::SsdTier::open(options(d.path / "nope", MiB, t));
    check_disabled(*ssd, "ssd tier disabled: cannot open cache dir ");
    CHECK(ssd->state().error.find("No such file or directory") != std::string::npos);
}

TEST_CASE("a cache dir that cannot be written, even by root, gives a disabled tier") {
    Table t({1});
    CacheDir d;
    // Root ignores permission bits; a path below a regular file fails anyway.
    std::ofstream(d.path / "file") << "x";
    auto ssd = cache::SsdTier::open(options(d.path / "file" / "cache", MiB, t));
    check_disabled(*ssd, "ssd tier disabled: cannot open cache dir ");
    CHECK(ssd->state().error.find("Not a directory") != std::string::npos);
}

TEST_CASE("a capacity below one block, or no file table, gives a disabled tier") {
    CacheDir d;
    Table t({1});
    auto ssd = cache::SsdTier::open(options(d.path, 4095, t));
    check_disabled(*ssd, "ssd tier disabled: --ssd 4095 bytes is less than one 4 KiB block");
    auto o = options(d.path, MiB, t);
    o.describe = nullptr;
    check_disabled(*cache::SsdTier::open(o), "ssd tier disabled: no file table");
    CHECK(d.count(".cache") == 0);
}

TEST_CASE("a second mount of the same dataset and cache dir finds the cache file in use") {
    CacheDir d;
    Table t({100});
    auto first = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(first->state().enabled);
    REQUIRE(first->put(0, t.blob(0)));
    auto second = cache::SsdTier::open(options(d.path, MiB, t));
    check_disabled(*second, "ssd tier disabled: ");
    CHECK(second->state().error.ends_with("is in use by another clairfs mount"));
    second.reset(); // must leave the first one's files alone
    CHECK(test::view(first->get(0)) == t.bytes(0));
}

TEST_CASE("describe_index names regular files by relative path, size and mtime") {
    test::Dataset ds(3);
    cache::DescribeFile describe = cache::describe_index(ds.idx);
    cache::FileIdentity f;
    REQUIRE(describe(ds.id(1), f));
    CHECK(f.path == test::sample_name(1));
    CHECK(f.size == ds.contents[1].size());
    struct stat st;
    REQUIRE(::stat(ds.path(1).c_str(), &st) == 0);
    CHECK(f.mtime_ns == st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec);
    CHECK_FALSE(describe(index::root_id, f)); // a directory
    CHECK_FALSE(describe(static_cast<index::NodeId>(ds.idx.size()), f));
}

TEST_CASE("Blob::make gives a 4 KiB aligned buffer of whole blocks with a zero tail") {
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, K4 - 1, K4, K4 + 1, 3 * MiB + 5}) {
        CAPTURE(size);
        auto b = cache::Blob::make(size);
        CHECK(b->size == size);
        CHECK(b->capacity == std::max(K4, cache::Blob::round_up(size)));
        CHECK(reinterpret_cast<uintptr_t>(b->bytes.get()) % K4 == 0);
        CHECK(std::all_of(b->bytes.get() + size, b->bytes.get() + b->capacity,
                          [](char c) { return c == 0; }));
    }
}

TEST_CASE("libaio transfers: many chunks in flight, a short read at the end, errors") {
    CacheDir d;
    int fd = ::open((d.path / "f").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
    REQUIRE(fd >= 0);
    const uint64_t len = 3 * MiB + K4;
    cache::BlobRef w = Table::make_blob(1, len);
    auto r = cache::Blob::make(len + K4);
    io_context_t ctx = nullptr;
    REQUIRE(io_setup(4, &ctx) == 0);
    // 3-block chunks, two in flight: hundreds of requests for one call.
    CHECK(cache::aio_transfer(ctx, 2, 3 * K4, fd, true, w->bytes.get(), len, 0) == 0);
    CHECK(cache::aio_transfer(ctx, 4, 64 * 1024, fd, false, r->bytes.get(), len, 0) == 0);
    CHECK(std::memcmp(r->bytes.get(), w->bytes.get(), len) == 0);
    // Straddling the end: the first block arrives short, the rest is an error.
    CHECK(cache::aio_transfer(ctx, 4, MiB, fd, false, r->bytes.get(), 2 * K4, len - K4) == -EIO);
    CHECK(cache::aio_transfer(ctx, 4, MiB, fd, false, r->bytes.get(), K4, 100) == -EINVAL);
    REQUIRE(ctx != nullptr); // a failed request leaves the context usable
    CHECK(cache::aio_transfer(ctx, 4, MiB, fd, false, r->bytes.get(), K4, K4) == 0);
    CHECK(cache::aio_transfer(ctx, 4, MiB, fd, false, r->bytes.get(), 0, 0) == 0);
    io_destroy(ctx);

    CHECK(cache::sync_transfer(fd, false, r->bytes.get(), 2 * K4, len - K4) == -EIO);
    CHECK(cache::sync_transfer(-1, false, r->bytes.get(), K4, 0) == -EBADF);

    // Threads with a context each, on one file.
    cache::AioFile file(fd, true);
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int th = 0; th < 4; ++th)
        threads.emplace_back([&, th] {
            cache::BlobRef mine = Table::make_blob(static_cast<size_t>(th) + 10, 256 * 1024);
            auto back = cache::Blob::make(256 * 1024);
            uint64_t off = static_cast<uint64_t>(th) * 256 * 1024;
            for (int k = 0; k < 20; ++k) {
                if (file.write(mine->bytes.get(), 256 * 1024, off) != 0 ||
                    file.read(back->bytes.get(), 256 * 1024, off) != 0 ||
                    std::memcmp(back->bytes.get(), mine->bytes.get(), 256 * 1024) != 0)
                    ++bad;
            }
        });
    for (auto& th : threads) th.join();
    CHECK(bad == 0);
    CHECK(file.sync() == 0);
}

namespace {

uint64_t allocated_bytes(const std::string& path) {
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<uint64_t>(st.st_blocks) * 512;
}

} // namespace

TEST_CASE("each entry is a file of exactly its size, handed to the kernel only once verified") {
    CacheDir d;
    Table t({110 * 1000, 4096, 0, 5});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    for (index::NodeId id = 0; id < 4; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(ssd->state().entries_dir)) {
        ++files;
        struct stat st;
        REQUIRE(::stat(e.path().c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0600);
    }
    CHECK(files == 3); // an empty file has none
    // Written, not yet read back: the kernel may not have it.
    CHECK_FALSE(ssd->verified(0));
    CHECK(ssd->open_for_kernel(0) == -EAGAIN);
    CHECK(ssd->open_for_kernel(2) == -ENOENT); // empty
    CHECK(ssd->open_for_kernel(9) == -ENOENT); // not held
    CHECK(test::view(ssd->warm(0)) == t.bytes(0));
    // A read from the device (O_DIRECT) checks the bytes it returned, not
    // the pages the kernel would read: it verifies nothing.
    CHECK(test::view(ssd->get(3)) == t.bytes(3));
    CHECK(ssd->verified(0));
    CHECK_FALSE(ssd->verified(3));
    CHECK(ssd->open_for_kernel(3) == -EAGAIN);
    CHECK(ssd->state().verified == 1);
    CHECK(ssd->stats().hits == 1); // warm() counts nothing unless asked
    CHECK(test::view(ssd->warm(3, true)) == t.bytes(3));
    CHECK(ssd->stats().hits == 2);
    CHECK(ssd->state().verified == 2);
    for (index::NodeId id : {0u, 3u}) {
        int fd = ssd->open_for_kernel(id);
        REQUIRE(fd >= 0);
        CHECK(read_fd(fd) == t.bytes(id)); // to its end and no further
        ::close(fd);
    }
}

TEST_CASE("an entry whose checked pages left the page cache is the daemon's until checked again") {
    CacheDir d;
    Table t({110 * 1000, 70 * 1000});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    for (index::NodeId id = 0; id < 2; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    REQUIRE(ssd->warm(0) != nullptr);
    REQUIRE(ssd->warm(1) != nullptr);
    // Entry 0's file, found by its size; one page of it dropped, as reclaim
    // would.
    std::string path = entry_file_of_size(*ssd, 110 * 1000);
    REQUIRE(!path.empty());
    int raw = ::open(path.c_str(), O_RDONLY);
    REQUIRE(raw >= 0);
    REQUIRE(::posix_fadvise(raw, 40960, 4096, POSIX_FADV_DONTNEED) == 0);
    ::close(raw);
    CHECK(ssd->open_for_kernel(0) == -ENODATA);
    CHECK_FALSE(ssd->verified(0));
    CHECK(ssd->open_for_kernel(0) == -EAGAIN); // no longer verified
    CHECK(ssd->state().verified == 1);
    int fd = ssd->open_for_kernel(1); // untouched
    REQUIRE(fd >= 0);
    ::close(fd);
    REQUIRE(ssd->warm(0) != nullptr); // read and checked again
    fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == t.bytes(0));
    ::close(fd);
    // drop_pages() (drop-behind) clears the mark itself.
    CHECK(ssd->drop_pages(1) == 0);
    CHECK_FALSE(ssd->verified(1));
    CHECK(ssd->open_for_kernel(1) == -EAGAIN);
}

// --ssd-check once: the device is trusted once it has the bytes, as a
// local copy would be. Written in this mount is checked; a page gone is
// no reason to check again, and drop_pages() keeps the mark; a file written
// to or replaced by hand is the daemon's until read and checked again.
TEST_CASE("with check_once an entry is the kernel's from its write until its file changes") {
    CacheDir d;
    Table t({110 * 1000, 70 * 1000, 0});
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = true;
    auto ssd = cache::SsdTier::open(o);
    CHECK(ssd->checks_once());
    for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    CHECK(ssd->verified(0));
    CHECK(ssd->verified(1));
    CHECK_FALSE(ssd->verified(2)); // empty: it has no file to hand over
    CHECK(ssd->state().verified == 2);
    CHECK(ssd->read_ahead(0) == 0);
    CHECK(ssd->read_ahead(2) == -ENOENT);
    // Its pages dropped (written with O_DIRECT, there may be none): still
    // the kernel's, read from the device.
    CHECK(ssd->drop_pages(0) == 0);
    CHECK(ssd->verified(0));
    int fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == t.bytes(0));
    ::close(fd);

    // Entry 1's file rewritten in place with other bytes of its size.
    std::string path = entry_file_of_size(*ssd, 70 * 1000);
    REQUIRE(!path.empty());
    ::usleep(20'000); // past the file system's timestamp granularity
    {
        int raw = ::open(path.c_str(), O_WRONLY);
        REQUIRE(raw >= 0);
        std::string junk(4096, 'x');
        REQUIRE(::pwrite(raw, junk.data(), junk.size(), 8192) == 4096);
        ::close(raw);
    }
    CHECK(ssd->open_for_kernel(1) == -EAGAIN); // changed: not handed over
    CHECK_FALSE(ssd->verified(1));
    CHECK(ssd->read_ahead(1) == -EAGAIN);
    CHECK(ssd->get(1) == nullptr); // the daemon's read finds the mismatch
    CHECK_FALSE(ssd->contains(1));
    CHECK(ssd->state().errors == 1);
    CHECK(ssd->state().verified == 1);
}

TEST_CASE("with check_once a remount's entries are checked by their first read, O_DIRECT or not") {
    CacheDir d;
    Table t({110 * 1000, 70 * 1000});
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = true;
    {
        auto ssd = cache::SsdTier::open(o);
        for (index::NodeId id = 0; id < 2; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    }
    auto ssd = cache::SsdTier::open(o);
    REQUIRE(ssd->state().reused == 2);
    CHECK_FALSE(ssd->verified(0)); // another mount wrote it: checked first
    CHECK(ssd->open_for_kernel(0) == -EAGAIN);
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
    CHECK(ssd->verified(0));
    CHECK_FALSE(ssd->verified(1));
    int fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == t.bytes(0));
    ::close(fd);
}

TEST_CASE("an evicted entry is unlinked, never overwritten: a kernel's descriptor keeps its bytes") {
    CacheDir d;
    Table t({100 * 1000, 100 * 1000});
    auto ssd = cache::SsdTier::open(options(d.path, 100 * 1024, t)); // room for one
    std::vector<index::NodeId> dropped;
    ssd->set_drop_listener([&](index::NodeId id) { dropped.push_back(id); });
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->warm(0) != nullptr);
    int fd = ssd->open_for_kernel(0);
    REQUIRE(fd >= 0);
    CHECK(ssd->evict(0) == 100 * 1000);
    CHECK(dropped == std::vector<index::NodeId>{0});
    REQUIRE(ssd->put(1, t.blob(1))); // the same extent, so the same name
    CHECK(read_fd(fd) == t.bytes(0));
    ::close(fd);
    CHECK(ssd->open_for_kernel(0) == -ENOENT);
    CHECK_FALSE(ssd->verified(1)); // a new entry starts unverified
}

TEST_CASE("the reserve gives up the blocks its entries take, and takes them back") {
    CacheDir d;
    Table t({256 * 1024, 256 * 1024});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    const std::string reserve = ssd->state().cache_file;
    CHECK(allocated_bytes(reserve) >= MiB);
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(1, t.blob(1)));
    CHECK(allocated_bytes(reserve) <= MiB / 2);
    ssd->evict(0);
    CHECK(allocated_bytes(reserve) >= 3 * MiB / 4);
}

TEST_CASE("files in the entries' directory that no journal record vouches for are removed") {
    CacheDir d;
    Table t({3000});
    std::string entries;
    {
        auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
        REQUIRE(ssd->put(0, t.blob(0)));
        entries = ssd->state().entries_dir;
    }
    {
        // Another entry's name, with other bytes: never served, never kept.
        FILE* f = std::fopen((entries + "/000000000001").c_str(), "w");
        REQUIRE(f);
        std::fputs("foreign", f);
        std::fclose(f);
    }
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    CHECK(ssd->state().reused == 1);
    CHECK_FALSE(fs::exists(entries + "/000000000001"));
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
}

TEST_CASE("an entry whose file was cut short is dropped, not served, and not a device error") {
    CacheDir d;
    Table t({9000});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(ssd->put(0, t.blob(0)));
    fs::resize_file(ssd->state().entries_dir + "/000000000000", 4096);
    CHECK(ssd->get(0) == nullptr);
    CHECK_FALSE(ssd->contains(0));
    CHECK(ssd->state().io_errors == 0);
    CHECK(ssd->state().errors == 1);
}

namespace {

// Entries 0..2 as the chunks of one record file, at their own offsets in
// one shared file; entry 3 in a file of its own.
constexpr uint64_t chunk = 8192;
// Bytes this process made the kernel read from a device, or -1 where the
// kernel does not count them.
long long device_read_bytes() {
    FILE* f = std::fopen("/proc/self/io", "r");
    if (!f) return -1;
    char key[64];
    long long v = -1, out = -1;
    while (std::fscanf(f, "%63[^:]: %lld\n", key, &v) == 2)
        if (std::strcmp(key, "read_bytes") == 0) out = v;
    std::fclose(f);
    return out;
}

} // namespace

TEST_CASE("an entry's last partial block is written, not cut to: storing reads nothing back") {
    CacheDir d;
    // Sizes on both sides of a block boundary, below one block, and whole.
    const std::vector<uint64_t> sizes{1, 4095, 4096, 4097, 8191, 110'000, 3 * 4096};
    Table t(sizes);
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(ssd->state().enabled);
    const long long before = device_read_bytes();
    for (index::NodeId id = 0; id < sizes.size(); ++id) REQUIRE(ssd->put(id, t.blob(id)));
    const long long after = device_read_bytes();
    // A cut to a size inside the last block made ext4 read that block back
    // to zero its end: 4 KiB read per entry. Where the tier writes through
    // the page cache (no O_DIRECT here) nothing is read either way.
    if (before >= 0 && after >= 0) CHECK(after - before == 0);
    for (index::NodeId id = 0; id < sizes.size(); ++id) {
        CHECK_FALSE(entry_file_of_size(*ssd, sizes[id]).empty()); // exactly its size
        CHECK(test::view(ssd->get(id)) == t.bytes(id)); // O_DIRECT where taken
        CHECK(test::view(ssd->warm(id)) == t.bytes(id)); // through the page cache
    }
}

namespace {

const std::vector<uint64_t> record_sizes{chunk, chunk, 5000, 3000};
constexpr uint64_t record_size = 2 * chunk + 5000;

cache::SsdOptions shared_options(const CacheDir& d, const Table& t, bool once) {
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = once;
    o.place = [](index::NodeId id, cache::SharedPlace& out) {
        if (id > 2) return false;
        out.file = "r-record";
        out.offset = id * chunk;
        out.file_size = record_size;
        return true;
    };
    return o;
}

std::string record_bytes(const Table& t) {
    return t.bytes(0) + t.bytes(1) + t.bytes(2);
}

} // namespace

TEST_CASE("a record file's chunks share one file, handed to the kernel whole once all are there") {
    CacheDir d;
    Table t(record_sizes);
    auto ssd = cache::SsdTier::open(shared_options(d, t, true));
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(2, t.blob(2))); // out of order: the last, short chunk first
    const fs::path shared = fs::path(ssd->state().entries_dir) / "r-record";
    REQUIRE(fs::exists(shared));
    CHECK(fs::file_size(shared) == record_size);
    CHECK(ssd->open_whole_for_kernel(0, 2) == -ENOENT); // chunk 1 missing
    REQUIRE(ssd->put(1, t.blob(1)));
    REQUIRE(ssd->put(3, t.blob(3)));
    CHECK(ssd->open_whole_for_kernel(0, 3) == -ENOENT); // 3 is not in it
    CHECK(ssd->open_for_kernel(1) == -ENOENT);          // a chunk alone is never handed over
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(ssd->state().entries_dir)) {
        (void)e;
        ++files;
    }
    CHECK(files == 2);
    for (index::NodeId id = 0; id < 4; ++id) CHECK(test::view(ssd->get(id)) == t.bytes(id));
    int fd = ssd->open_whole_for_kernel(0, 2);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == record_bytes(t));

    // A chunk that leaves takes the whole file with it (unlinked, never cut
    // into): the descriptor the kernel holds keeps every byte.
    std::vector<index::NodeId> dropped;
    ssd->set_drop_listener([&](index::NodeId id) { dropped.push_back(id); });
    CHECK(ssd->evict(1) == chunk);
    std::sort(dropped.begin(), dropped.end());
    CHECK(dropped == std::vector<index::NodeId>{0, 1, 2});
    CHECK_FALSE(fs::exists(shared));
    CHECK(ssd->contains(3));
    CHECK(ssd->stats().entries == 1);
    CHECK(read_fd(fd) == record_bytes(t));
    ::close(fd);
    CHECK(ssd->open_whole_for_kernel(0, 2) == -ENOENT);
    // Written again: a new file, whole again.
    for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
    fd = ssd->open_whole_for_kernel(0, 2);
    REQUIRE(fd >= 0);
    CHECK(read_fd(fd) == record_bytes(t));
    ::close(fd);
}

TEST_CASE("a shared file is the kernel's only once checked, and not after a change by hand") {
    CacheDir d;
    Table t(record_sizes);
    {
        // --ssd-check resident: O_DIRECT reads check bytes, not pages.
        auto ssd = cache::SsdTier::open(shared_options(d, t, false));
        for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->put(id, t.blob(id)));
        CHECK(ssd->open_whole_for_kernel(0, 2) == -EAGAIN);
        for (index::NodeId id = 0; id < 3; ++id) REQUIRE(ssd->warm(id) != nullptr);
        int fd = ssd->open_whole_for_kernel(0, 2);
        REQUIRE(fd >= 0);
        CHECK(read_fd(fd) == record_bytes(t));
        ::close(fd);
    }
    // A remount takes the chunks back, unverified until read.
    auto ssd = cache::SsdTier::open(shared_options(d, t, true));
    REQUIRE(ssd->state().reused == 3);
    CHECK(ssd->open_whole_for_kernel(0, 2) == -EAGAIN);
    for (index::NodeId id = 0; id < 3; ++id) CHECK(test::view(ssd->get(id)) == t.bytes(id));
    int fd = ssd->open_whole_for_kernel(0, 2);
    REQUIRE(fd >= 0);
    ::close(fd);
    // Written to by hand: not handed over; the chunk it hit fails its
    // check and takes the file with it.
    const fs::path shared = fs::path(ssd->state().entries_dir) / "r-record";
    ::usleep(20'000);
    {
        int raw = ::open(shared.c_str(), O_WRONLY);
        REQUIRE(raw >= 0);
        std::string junk(100, 'x');
        REQUIRE(::pwrite(raw, junk.data(), junk.size(), chunk + 10) == 100);
        ::close(raw);
    }
    CHECK(ssd->open_whole_for_kernel(0, 2) == -EAGAIN);
    CHECK(test::view(ssd->get(0)) == t.bytes(0));
    CHECK(ssd->get(1) == nullptr);
    CHECK_FALSE(ssd->contains(0));
    CHECK_FALSE(fs::exists(shared));
    CHECK(ssd->state().errors == 1);
}
