// SPDX-License-Identifier: MIT
// The RAM tier's budget is hard: it refuses what does not fit and never
// makes room by itself, because what to drop is decided above it.
#include "clairfs/cache/ram_tier.hpp"
#include "dataset.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <doctest/doctest.h>
#include <thread>
#include <vector>

using namespace clairfs;

namespace {

cache::BlobRef blob_of(size_t n, size_t size) {
    auto b = cache::Blob::make(size);
    std::string s = test::sample_bytes(n, size);
    std::memcpy(b->bytes.get(), s.data(), size);
    return b;
}

} // namespace

TEST_CASE("Blob::make sizes the buffer, including an empty one") {
    auto b = cache::Blob::make(4096);
    CHECK(b->size == 4096);
    CHECK(b->bytes != nullptr);
    auto e = cache::Blob::make(0);
    CHECK(e->size == 0);
}

TEST_CASE("a file exactly the free budget fits; one byte more is refused") {
    cache::RamTier t(1000);
    CHECK(std::string(t.name()) == "ram");
    CHECK(t.put(1, blob_of(1, 600)));
    CHECK_FALSE(t.put(2, blob_of(2, 401))); // one byte over
    CHECK_FALSE(t.contains(2));
    CHECK(t.put(3, blob_of(3, 400))); // exactly the rest
    CHECK_FALSE(t.put(4, blob_of(4, 1)));
    CHECK_FALSE(t.put(5, blob_of(5, 5000))); // larger than the whole budget

    auto s = t.stats();
    CHECK(s.bytes == 1000);
    CHECK(s.capacity == 1000);
    CHECK(s.entries == 2);
    CHECK(s.rejected == 3);
    CHECK(s.evictions == 0);
    // It never evicted to make room: both first files are still there.
    CHECK(t.contains(1));
    CHECK(t.contains(3));
}

TEST_CASE("evict frees exactly the file's bytes, and only once") {
    cache::RamTier t(1000);
    REQUIRE(t.put(1, blob_of(1, 700)));
    CHECK_FALSE(t.put(2, blob_of(2, 700)));
    CHECK(t.evict(1) == 700);
    CHECK(t.evict(1) == 0);
    CHECK(t.evict(42) == 0);
    CHECK(t.put(2, blob_of(2, 700)));
    auto s = t.stats();
    CHECK(s.bytes == 700);
    CHECK(s.entries == 1);
    CHECK(s.evictions == 1);
    CHECK(s.rejected == 1);
}

TEST_CASE("putting a held file again keeps the old copy and its accounting") {
    cache::RamTier t(1000);
    auto first = blob_of(1, 300);
    REQUIRE(t.put(7, first));
    CHECK(t.put(7, blob_of(99, 300)));
    CHECK(t.put(7, blob_of(99, 900))); // would not fit, but nothing is stored
    CHECK(t.get(7) == first);
    auto s = t.stats();
    CHECK(s.bytes == 300);
    CHECK(s.entries == 1);
    CHECK(s.rejected == 0);
}

TEST_CASE("a reader's reference survives eviction with the right bytes") {
    cache::RamTier t(1 << 20);
    REQUIRE(t.put(3, blob_of(3, 100000)));
    cache::BlobRef reading = t.get(3);
    REQUIRE(reading);
    CHECK(t.evict(3) == 100000);
    CHECK(t.get(3) == nullptr);
    // Fill the freed budget so a use-after-free would likely show different bytes.
    REQUIRE(t.put(4, blob_of(4, 100000)));
    CHECK(test::view(reading) == test::sample_bytes(3, 100000));
}

TEST_CASE("get counts hits and misses; peek, contains and held count nothing") {
    cache::RamTier t(1000);
    REQUIRE(t.put(1, blob_of(1, 10)));
    REQUIRE(t.put(2, blob_of(2, 20)));
    CHECK(t.get(1));
    CHECK(t.get(2));
    CHECK(t.get(3) == nullptr);
    CHECK(t.peek(1) == t.peek(1));
    CHECK(t.peek(3) == nullptr);
    CHECK(t.contains(2));
    CHECK_FALSE(t.contains(3));
    std::vector<index::NodeId> held{77};
    t.held(held);
    std::sort(held.begin(), held.end());
    CHECK(held == std::vector<index::NodeId>{1, 2, 77}); // appends
    auto s = t.stats();
    CHECK(s.hits == 2);
    CHECK(s.misses == 1);
}

TEST_CASE("a null blob is refused without counting as a lack of room") {
    cache::RamTier t(1000);
    CHECK_FALSE(t.put(1, nullptr));
    CHECK_FALSE(t.contains(1));
    CHECK(t.stats().rejected == 0);
}

TEST_CASE("concurrent puts never overshoot the budget") {
    cache::RamTier t(10000);
    test::within(std::chrono::seconds(30), "concurrent puts", [&] {
        std::vector<std::thread> threads;
        for (unsigned th = 0; th < 8; ++th)
            threads.emplace_back([&, th] {
                for (index::NodeId i = 0; i < 500; ++i) {
                    index::NodeId id = th * 1000 + i;
                    t.put(id, blob_of(id, 37));
                    if (i % 3 == 0) t.evict(id);
                    t.get(id);
                }
            });
        for (auto& th : threads) th.join();
    });
    auto s = t.stats();
    CHECK(s.bytes <= s.capacity);
    std::vector<index::NodeId> held;
    t.held(held);
    CHECK(held.size() == s.entries);
    CHECK(s.bytes == s.entries * 37);
    CHECK(s.hits + s.misses == 8 * 500);
}

TEST_CASE("ids outside the node count are never held") {
    cache::RamTier t(1000, 4);
    CHECK(t.put(3, blob_of(3, 10)));
    CHECK_FALSE(t.put(4, blob_of(4, 10)));
    CHECK_FALSE(t.contains(4));
    CHECK(t.get(4) == nullptr);
    CHECK(t.evict(4) == 0);
    CHECK(t.stats().rejected == 0); // not a lack of room
}

// Readers, writers and evicters on the same few slots at once: every byte
// served is the file's own, the budget is never exceeded at any moment a
// watcher looks, and when all is quiet the byte count is exactly the sum of
// what is held.
TEST_CASE("a put/get/evict hammer on shared slots keeps bytes and budget exact") {
    constexpr index::NodeId files = 64;
    auto size_of = [](index::NodeId id) { return size_t{100} + id * 37; };
    std::vector<cache::BlobRef> blobs;
    for (index::NodeId id = 0; id < files; ++id) blobs.push_back(blob_of(id, size_of(id)));
    // Room for about a third of the files, so puts are refused too.
    uint64_t total = 0;
    for (index::NodeId id = 0; id < files; ++id) total += size_of(id);
    cache::RamTier t(total / 3, files);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> wrong{0}, over{0}, served{0};
    test::within(std::chrono::seconds(60), "hammer", [&] {
        std::thread watcher([&] {
            while (!done.load()) {
                auto s = t.stats();
                if (s.bytes > s.capacity) ++over;
            }
        });
        std::vector<std::thread> threads;
        for (unsigned th = 0; th < 8; ++th)
            threads.emplace_back([&, th] {
                uint64_t x = th * 2654435761u + 1;
                for (int i = 0; i < 20000; ++i) {
                    x = x * 6364136223846793005u + 1442695040888963407u;
                    auto id = static_cast<index::NodeId>((x >> 33) % files);
                    switch ((x >> 20) % 4) {
                    case 0:
                        t.put(id, blobs[id]);
                        break;
                    case 1:
                        t.evict(id);
                        break;
                    default:
                        if (cache::BlobRef b = (x & 1) ? t.get(id) : t.peek(id)) {
                            ++served;
                            if (b != blobs[id] || b->size != size_of(id)) ++wrong;
                        }
                    }
                }
            });
        for (auto& th : threads) th.join();
        done = true;
        watcher.join();
    });
    CHECK(wrong == 0);
    CHECK(over == 0);
    CHECK(served > 0);
    auto s = t.stats();
    std::vector<index::NodeId> held;
    t.held(held);
    uint64_t sum = 0;
    for (index::NodeId id : held) {
        CHECK(t.contains(id));
        CHECK(test::view(t.peek(id)) == test::sample_bytes(id, size_of(id)));
        sum += size_of(id);
    }
    CHECK(s.bytes == sum);
    CHECK(s.entries == held.size());
    // Evicting everything gives the whole budget back, to the byte.
    for (index::NodeId id = 0; id < files; ++id) t.evict(id);
    CHECK(t.stats().bytes == 0);
    CHECK(t.stats().entries == 0);
}

TEST_CASE("hand_over drops the copy, keeps the file contained and its budget, counts kernel hits") {
    cache::RamTier t(1000);
    REQUIRE(t.put(1, blob_of(1, 600)));
    cache::BlobRef reader = t.peek(1); // a READ still copying out of it
    CHECK(t.hand_over(1, 600));
    CHECK(t.contains(1)); // the prefetcher must not fetch it again
    CHECK(t.in_kernel(1));
    CHECK(t.peek(1) == nullptr);
    CHECK(t.stats().entries == 0);
    CHECK(t.stats().bytes == 600);   // page cache is memory all the same
    CHECK(t.stats().evictions == 0); // not an eviction: the bytes are still in memory
    std::vector<index::NodeId> held;
    t.held(held);
    CHECK(held == std::vector<index::NodeId>{1}); // a victim: the caller drops the pages
    CHECK(t.evict(1) == 0);                       // which evict() cannot do
    CHECK(reader->size == 600);
    CHECK(std::memcmp(reader->bytes.get(), test::sample_bytes(1, 600).data(), 600) == 0);
    CHECK_FALSE(t.put(2, blob_of(2, 401))); // the budget still counts the 600

    CHECK(t.get(1) == nullptr);
    CHECK(t.stats().hits == 1);
    CHECK(t.stats().misses == 0);
    auto k = t.kernel_stats();
    CHECK(k.files == 1);
    CHECK(k.bytes == 600);
    CHECK(k.handed_over == 1);
    CHECK(k.hits == 1);

    CHECK(t.kernel_lost(1, 600)); // dropped: the budget is free again
    CHECK(t.stats().bytes == 0);
    CHECK(t.put(2, blob_of(2, 1000)));
}

TEST_CASE("a file handed over without a copy here is marked only if it fits") {
    cache::RamTier t(1000);
    CHECK(t.hand_over(7, 700)); // evicted while open, read whole: marked and reserved
    CHECK(t.stats().bytes == 700);
    CHECK(t.kernel_stats().handed_over == 0); // no copy was dropped
    CHECK_FALSE(t.hand_over(8, 400));         // no room: left to the kernel, unaccounted
    CHECK_FALSE(t.contains(8));
    CHECK(t.hand_over(7, 700)); // already marked: nothing moves
    CHECK(t.stats().bytes == 700);
}

TEST_CASE("a put of a file the kernel was handed takes the reservation back") {
    cache::RamTier t(1000);
    REQUIRE(t.put(3, blob_of(3, 500)));
    REQUIRE(t.hand_over(3, 500));
    CHECK(t.put(3, blob_of(3, 500)));
    CHECK_FALSE(t.in_kernel(3));
    CHECK(t.stats().bytes == 500); // once, not twice
    CHECK(t.stats().entries == 1);
    CHECK(t.kernel_stats().files == 0);
}

TEST_CASE("kernel_lost clears the mark once and returns its bytes to the budget") {
    cache::RamTier t(10000);
    for (index::NodeId id = 1; id <= 3; ++id) {
        REQUIRE(t.put(id, blob_of(id, 100 * id)));
        REQUIRE(t.hand_over(id, 100 * id));
    }
    CHECK(t.kernel_stats().files == 3);
    CHECK(t.kernel_stats().bytes == 600);
    CHECK(t.kernel_lost(2, 200));
    CHECK_FALSE(t.kernel_lost(2, 200)); // a second READ of it is not another loss
    CHECK(t.stats().bytes == 400);
    CHECK_FALSE(t.contains(2));
    CHECK(t.get(2) == nullptr);
    CHECK(t.stats().misses == 1);
    CHECK(t.put(2, blob_of(2, 200))); // fetched again, held here
    CHECK(t.contains(2));
    CHECK(t.kernel_lost(1, 100));
    CHECK(t.kernel_lost(3, 300));
    CHECK(t.kernel_stats().files == 0);
    CHECK(t.kernel_stats().bytes == 0);
    CHECK(t.stats().bytes == 200); // only the copy held here
    CHECK_FALSE(t.contains(1));
    CHECK(t.contains(2));
}

TEST_CASE("hand_over racing puts, gets and losses keeps bytes, budget and marks exact") {
    cache::RamTier t(1 << 20, 64);
    std::atomic<bool> go{false};
    auto worker = [&](int seed) {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < 20000; ++i) {
            auto id = static_cast<index::NodeId>((i * 7 + seed) % 64);
            switch ((i + seed) % 4) {
            case 0: t.put(id, blob_of(id, 256)); break;
            case 1: t.hand_over(id, 256); break;
            case 2: t.kernel_lost(id, 256); break;
            default: {
                if (auto b = t.get(id)) CHECK(b->size == 256);
            }
            }
        }
    };
    std::vector<std::thread> ts;
    for (int s = 0; s < 4; ++s) ts.emplace_back(worker, s);
    go = true;
    for (auto& th : ts) th.join();
    uint64_t marked = 0, held = 0;
    for (index::NodeId id = 0; id < 64; ++id) {
        CHECK_FALSE((t.in_kernel(id) && t.peek(id) != nullptr)); // never both
        marked += t.in_kernel(id);
        held += t.peek(id) != nullptr;
    }
    CHECK(t.kernel_stats().files == marked);
    CHECK(t.kernel_stats().bytes == marked * 256);
    CHECK(t.stats().entries == held);
    CHECK(t.stats().bytes == (held + marked) * 256);
}
