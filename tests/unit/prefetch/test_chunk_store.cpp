// SPDX-License-Identifier: MIT
// Large files by chunk: how ChunkMap numbers and places chunks, and
// ChunkStore's reads against a real backing directory: every byte equal
// to the file's at any offset and across chunk boundaries, read-ahead for
// a sequential reader only, eviction under a budget smaller than the file,
// several sequential readers sharing a small budget without dropping one
// another's chunks unread (nor refused by fetch threads admitting at once),
// and ESTALE (nothing served) for a file changed since the scan.
#include "clairfs/prefetch/chunk_store.hpp"
#include "chunk_reads.hpp"
#include "disk_tree.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <random>
#include <unistd.h>
#include <vector>

using namespace clairfs;
using namespace clairfs::prefetch;

namespace {

std::string pattern(size_t size, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string s(size, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
}

struct ChunkedFiles {
    test::DiskTree tree;
    std::map<std::string, std::string> bytes;
    void put(const std::string& rel, size_t size, uint32_t seed) {
        bytes[rel] = pattern(size, seed);
        std::ofstream(tree.root / rel, std::ios::binary) << bytes[rel];
    }
};

index::NodeId id_of(const index::Index& idx, const std::string& rel) {
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        std::string p;
        idx.relative_path(id, p);
        if (p == rel) return id;
    }
    FAIL("no node " << rel);
    return 0;
}

struct Store {
    index::Index idx;
    int fd;
    cache::BackingStore backing;
    ChunkStore store;
    // `ssd`: a RAM tier standing in for the chunks' SSD tier (stage-in).
    Store(const ChunkedFiles& d, uint64_t above, uint32_t chunk, uint64_t ram, uint64_t ssd = 0,
          unsigned threads = 2, ChunkStore::Dropper dropper = {})
        : idx(d.tree.scan()), fd(::open(d.tree.root.c_str(), O_RDONLY | O_DIRECTORY)),
          backing(idx, fd),
          store(ChunkMap(idx, above, chunk), backing, idx, options(ram, threads)) {
        if (ssd) store.attach_ssd(std::make_unique<cache::RamTier>(ssd, store.map().chunks()));
        if (dropper) store.set_dropper(std::move(dropper));
        store.start();
    }
    ~Store() {
        store.stop({});
        ::close(fd);
    }
    static ChunkOptions options(uint64_t ram, unsigned threads) {
        ChunkOptions o;
        o.ram = ram;
        o.threads = threads;
        o.window = 4 * 64 << 10;
        return o;
    }
    std::string read(const std::string& rel, uint64_t off, size_t size) {
        std::string out(size, '\0');
        ssize_t got = test::read_chunks(store, id_of(idx, rel), off, size, out.data());
        REQUIRE(got == static_cast<ssize_t>(size));
        return out;
    }
    nlohmann::json status() const {
        nlohmann::json j;
        store.status(j);
        return j;
    }
};

} // namespace

TEST_CASE("chunk map: files above the cutoff, numbered densely, the last chunk short") {
    ChunkedFiles d;
    d.put("small", 1000, 1);
    d.put("big", 3 * 4096 + 5, 2);
    d.put("exact", 2 * 4096, 3);
    d.put("edge", 8192, 4); // at the cutoff: held whole
    index::Index idx = d.tree.scan();
    ChunkMap map(idx, 8191, 4096);
    index::NodeId big = id_of(idx, "big"), exact = id_of(idx, "exact");
    CHECK_FALSE(map.covers(id_of(idx, "small")));
    CHECK(map.covers(id_of(idx, "edge")));
    CHECK(map.covers(big));
    CHECK(map.covers(exact));
    CHECK(map.files() == 3);
    CHECK(map.chunks() == 4 + 2 + 2);
    CHECK(map.bytes() == 3 * 4096 + 5 + 2 * 4096 + 8192);
    ChunkId last = map.chunk_at(big, 3 * 4096 + 4);
    ChunkRange r = map.range(last);
    CHECK(r.node == big);
    CHECK(r.offset == 3 * 4096);
    CHECK(r.length == 5);
    CHECK(map.next_in_file(last) == no_chunk);
    CHECK(map.next_in_file(map.chunk_at(big, 0)) == map.chunk_at(big, 4096));
    CHECK(map.range(map.chunk_at(exact, 4096)).length == 4096);
    CHECK(map.next_in_file(map.chunk_at(exact, 4096)) == no_chunk);
    CHECK(map.file_index(map.chunk_at(exact, 0)) != map.file_index(last));
    CHECK(chunk_journal_name("a@1/b", r) == "a@1/b@12288");
    // Nothing chunked: an empty map.
    ChunkMap none(idx, 1 << 20, 4096);
    CHECK(none.files() == 0);
    CHECK_FALSE(none.covers(big));
}

TEST_CASE("chunk store: every byte equals the file's, at any offset and across chunks") {
    ChunkedFiles d;
    d.put("a", 1'000'003, 7);
    d.put("b", 300'000, 8);
    Store s(d, 100'000, 64 << 10, 8 << 20);
    std::mt19937 rng(3);
    for (int i = 0; i < 400; ++i) {
        const std::string& rel = i % 2 ? "a" : "b";
        const std::string& want = d.bytes[rel];
        uint64_t off = rng() % want.size();
        size_t len = std::min<size_t>(1 + rng() % (200 << 10), want.size() - off);
        REQUIRE(s.read(rel, off, len) == want.substr(off, len));
    }
    // Exactly at boundaries, and the last byte.
    CHECK(s.read("a", 65535, 2) == d.bytes["a"].substr(65535, 2));
    CHECK(s.read("a", 1'000'002, 1) == d.bytes["a"].substr(1'000'002, 1));
    CHECK(s.read("b", 0, 300'000) == d.bytes["b"]);
    // Without a copy: within one chunk, one part of it; across boundaries,
    // a part of each chunk, in order, that together are the range.
    index::NodeId a = id_of(s.idx, "a");
    auto joined = [](const ChunkPieces& p) {
        std::string out;
        for (const iovec& v : p.parts) out.append(static_cast<const char*>(v.iov_base), v.iov_len);
        return out;
    };
    ChunkPieces one;
    REQUIRE(s.store.read_pieces(a, 3 * 65536 + 10, 5000, one) == 0);
    CHECK(one.parts.size() == 1);
    CHECK(one.held.size() == 1);
    CHECK(joined(one) == d.bytes["a"].substr(3 * 65536 + 10, 5000));
    ChunkPieces two;
    REQUIRE(s.store.read_pieces(a, 65536 - 1, 2, two) == 0);
    CHECK(two.parts.size() == 2);
    CHECK(joined(two) == d.bytes["a"].substr(65535, 2));
    ChunkPieces many; // from within chunk 0 to the file's end in chunk 15
    REQUIRE(s.store.read_pieces(a, 51'427, 1'000'003 - 51'427, many) == 0);
    CHECK(many.parts.size() == 16);
    CHECK(joined(many) == d.bytes["a"].substr(51'427));
    nlohmann::json st = s.status();
    CHECK(st["fetch_errors"] == 0);
    // Each chunk came from the backing store once: RAM holds both files.
    CHECK(s.backing.stats().bytes == 1'000'003 + 300'000);
}

TEST_CASE("chunk store: a sequential reader is read ahead, a random one is not") {
    ChunkedFiles d;
    d.put("seq", 2 << 20, 1);
    d.put("rnd", 2 << 20, 2);
    Store s(d, 100'000, 64 << 10, 8 << 20);
    for (uint64_t off = 0; off < (2 << 20); off += 128 << 10)
        REQUIRE(s.read("seq", off, 128 << 10) == d.bytes["seq"].substr(off, 128 << 10));
    nlohmann::json st = s.status();
    // 32 chunks: the first read asks for the first two; each read queues
    // the 4 after it, before the next read asks for them: all the others
    // were queued ahead (how many arrive in time depends on the machine).
    CHECK(st["read_ahead"] == 30);
    uint64_t ahead = st["read_ahead"];
    // Far jumps, never where the last read ended.
    for (uint64_t off : {1'500'000u, 100'000u, 1'900'000u, 700'000u, 1'200'000u})
        REQUIRE(s.read("rnd", off, 1000) == d.bytes["rnd"].substr(off, 1000));
    CHECK(s.status()["read_ahead"] == ahead);
}

TEST_CASE("chunk store: a file larger than the budget is read whole, least recently used out") {
    ChunkedFiles d;
    d.put("big", 3 << 20, 5);
    Store s(d, 100'000, 64 << 10, 1 << 20);
    for (int pass = 0; pass < 2; ++pass)
        for (uint64_t off = 0; off < (3 << 20); off += 256 << 10)
            REQUIRE(s.read("big", off, 256 << 10) == d.bytes["big"].substr(off, 256 << 10));
    nlohmann::json st = s.status();
    CHECK(st["ram"]["bytes"].get<uint64_t>() <= (1 << 20));
    CHECK(st["ram"]["evictions"].get<uint64_t>() > 0);
}

TEST_CASE("chunk store: a file changed since the scan is refused with ESTALE") {
    ChunkedFiles d;
    d.put("f", 1 << 20, 9);
    Store s(d, 100'000, 64 << 10, 8 << 20);
    d.put("f", (1 << 20) + 10, 10); // another size, another mtime
    std::string out(4096, '\0');
    CHECK(test::read_chunks(s.store, id_of(s.idx, "f"), 0, 4096, out.data()) == -ESTALE);
    CHECK(s.status()["fetch_errors"].get<uint64_t>() >= 1);
    CHECK(s.backing.stats().stale >= 1);
}

TEST_CASE("chunk store: readers of several files share the read-ahead budget, nothing wasted") {
    ChunkedFiles d;
    for (int f = 0; f < 6; ++f) d.put("s" + std::to_string(f), 1 << 20, 20 + f);
    // 1 MiB of RAM: 16 chunks, at most 8 of them read ahead and unread,
    // for six readers in turn, each window 4 chunks.
    Store s(d, 100'000, 64 << 10, 1 << 20);
    for (uint64_t off = 0; off < (1 << 20); off += 32 << 10)
        for (int f = 0; f < 6; ++f) {
            std::string rel = "s" + std::to_string(f);
            REQUIRE(s.read(rel, off, 32 << 10) == d.bytes[rel].substr(off, 32 << 10));
        }
    nlohmann::json st = s.status();
    CHECK(st["read_ahead"].get<uint64_t>() > 0);
    CHECK(st["read_ahead_wasted"] == 0);
    CHECK(st["ram"]["evictions"].get<uint64_t>() > 0);
    // Each byte from the backing store once.
    CHECK(s.backing.stats().bytes == 6u << 20);
}

// Fetch threads admit chunks at the same time. Two that both saw room for
// one chunk used to take it both: the second was refused by RAM, dropped
// unread and fetched again (7 of 150 runs of the case above failed so on
// a loaded machine). Here six readers on threads of their own, and eight
// fetch threads, make the overlap likely without load.
TEST_CASE("chunk store: fetch threads admitting at once never refuse a chunk read ahead") {
    ChunkedFiles d;
    for (int f = 0; f < 6; ++f) d.put("s" + std::to_string(f), 1 << 20, 40 + f);
    for (int round = 0; round < 8; ++round) {
        CAPTURE(round);
        Store s(d, 100'000, 64 << 10, 1 << 20, 0, 8);
        std::atomic<int> wrong{0};
        std::vector<std::thread> readers;
        for (int f = 0; f < 6; ++f)
            readers.emplace_back([&, f] {
                std::string rel = "s" + std::to_string(f);
                index::NodeId id = id_of(s.idx, rel);
                std::string out(32 << 10, '\0');
                for (uint64_t off = 0; off < (1 << 20); off += 32 << 10)
                    if (test::read_chunks(s.store, id, off, out.size(), out.data()) !=
                            static_cast<ssize_t>(out.size()) ||
                        out != d.bytes[rel].substr(off, out.size()))
                        ++wrong;
            });
        for (auto& t : readers) t.join();
        CHECK(wrong == 0);
        nlohmann::json st = s.status();
        CHECK(st["ram"]["rejected"] == 0);
        CHECK(st["read_ahead_wasted"] == 0);
        // Not "each byte once": readers at different speeds may evict one
        // another's half-read chunks, as least recently used.
    }
}

// Drop-behind (ChunkStore::set_drop_behind): a stream of READs of 64 KiB
// or more that enters a chunk drops the one 1 MiB behind (16 chunks of 64
// KiB) from the page cache, on the store's own thread; page faults (4 KiB
// READs), jumps, and any READ while it is off drop nothing.
TEST_CASE("chunk store: a stream's pages are dropped 1 MiB behind, and only a stream's") {
    ChunkedFiles d;
    d.put("f", 2 << 20, 11);  // 32 chunks of 64 KiB
    d.put("g", 2 << 20, 12);
    std::mutex mu;
    std::vector<std::pair<uint64_t, uint64_t>> dropped; // (offset, size), file f or g
    std::vector<index::NodeId> nodes;
    Store s(d, 100'000, 64 << 10, 8 << 20, 0, 2,
            [&](index::NodeId id, uint64_t off, uint64_t size) {
                std::lock_guard lk(mu);
                dropped.emplace_back(off, size);
                nodes.push_back(id);
                return 0;
            });
    auto count = [&] {
        std::lock_guard lk(mu);
        return dropped.size();
    };
    auto settle = [&](size_t want) {
        for (int i = 0; i < 500 && count() < want; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // and no more than that
    };
    CHECK_FALSE(s.store.drop_behind()); // off until the room is weighed
    // Off: a whole stream drops nothing.
    for (uint64_t off = 0; off < (2 << 20); off += 64 << 10)
        REQUIRE(s.read("g", off, 64 << 10) == d.bytes["g"].substr(off, 64 << 10));
    settle(0);
    CHECK(count() == 0);

    s.store.set_drop_behind(true);
    // Page faults, one page at a time through chunks 0-19: nothing.
    for (uint64_t off = 0; off < (1280 << 10); off += 4096)
        REQUIRE(s.read("f", off, 4096) == d.bytes["f"].substr(off, 4096));
    // Jumps of 64 KiB READs over the file: nothing.
    for (uint64_t off : {29u << 16, 2u << 16, 24u << 16, 5u << 16})
        REQUIRE(s.read("f", off, 64 << 10) == d.bytes["f"].substr(off, 64 << 10));
    settle(0);
    CHECK(count() == 0);
    // A stream from the start: entering chunk c (16 .. 31) drops chunk c - 16.
    index::NodeId f = id_of(s.idx, "f");
    for (uint64_t off = 0; off < (2 << 20); off += 128 << 10) {
        // Two READs per 128 KiB, as the kernel's read-ahead sends them.
        REQUIRE(s.read("f", off, 64 << 10) == d.bytes["f"].substr(off, 64 << 10));
        REQUIRE(s.read("f", off + (64 << 10), 64 << 10) ==
                d.bytes["f"].substr(off + (64 << 10), 64 << 10));
    }
    settle(16);
    std::lock_guard lk(mu);
    REQUIRE(dropped.size() == 16);
    for (size_t i = 0; i < dropped.size(); ++i) {
        CHECK(nodes[i] == f);
        CHECK(dropped[i].first == i * (64 << 10));
        CHECK(dropped[i].second == 64u << 10);
    }
    CHECK(s.status()["dropped_behind"] == 16);
}

TEST_CASE("chunk store: a stage-in fetch that fails leaves the chunk free to be read ahead") {
    ChunkedFiles d;
    d.put("f", 2 << 20, 1);
    std::string original = d.bytes["f"];
    auto mtime = std::filesystem::last_write_time(d.tree.root / "f");
    Store s(d, 100'000, 64 << 10, 8 << 20, 64 << 20);
    index::NodeId f = id_of(s.idx, "f");
    ChunkId fifth = s.store.map().chunk_at(f, 5 * 65536);
    // Changed since the scan: the staged fetch fails with ESTALE.
    d.put("f", (2 << 20) + 1, 2);
    REQUIRE(s.store.stage(fifth));
    for (int i = 0; i < 500 && !s.store.stage_idle(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(s.store.stage_idle());
    CHECK_FALSE(s.store.staged(fifth));
    CHECK(s.status()["fetch_errors"].get<uint64_t>() >= 1);
    // The scan's version back, mtime and all: readable again.
    std::ofstream(d.tree.root / "f", std::ios::binary | std::ios::trunc) << original;
    std::filesystem::last_write_time(d.tree.root / "f", mtime);
    d.bytes["f"] = original;
    for (uint64_t off = 0; off < (2 << 20); off += 128 << 10)
        REQUIRE(s.read("f", off, 128 << 10) == original.substr(off, 128 << 10));
    // As in the sequential case: every chunk but the first two read ahead,
    // the one whose stage-in failed included.
    CHECK(s.status()["read_ahead"] == 30);
}
