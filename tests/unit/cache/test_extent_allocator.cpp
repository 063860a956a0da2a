// SPDX-License-Identifier: MIT
// The SSD cache file's free space: every extent 4 KiB aligned, best fit,
// neighbours merged on release, and the accounting exact to the byte, since
// the SSD tier refuses a put on what the allocator says.
#include "cache/extent_allocator.hpp"
#include "sizes.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

using namespace clairfs;
using cache::ExtentAllocator;
using test::K4;

namespace {

uint64_t must_allocate(ExtentAllocator& a, uint64_t len) {
    std::optional<uint64_t> off = a.allocate(len);
    REQUIRE(off);
    return *off;
}

} // namespace

TEST_CASE("lengths round up to 4 KiB and the capacity rounds down") {
    CHECK(ExtentAllocator::aligned(0) == 0);
    CHECK(ExtentAllocator::aligned(1) == K4);
    CHECK(ExtentAllocator::aligned(K4) == K4);
    CHECK(ExtentAllocator::aligned(K4 + 1) == 2 * K4);

    ExtentAllocator a(10 * K4 + 100);
    CHECK(a.capacity() == 10 * K4);
    CHECK(a.free_bytes() == 10 * K4);
    CHECK(a.free_extents() == 1);
    ExtentAllocator tiny(K4 - 1);
    CHECK(tiny.capacity() == 0);
    CHECK_FALSE(tiny.allocate(1));
    CHECK(tiny.allocate(0) == 0u); // an empty file takes no space anywhere
}

TEST_CASE("offsets are aligned and the used bytes are the rounded lengths") {
    ExtentAllocator a(16 * K4);
    uint64_t x = must_allocate(a, 1);
    uint64_t y = must_allocate(a, K4 + 1);
    uint64_t z = must_allocate(a, 3 * K4);
    for (uint64_t off : {x, y, z}) CHECK(off % K4 == 0);
    CHECK(a.used_bytes() == 6 * K4);
    CHECK(a.free_bytes() == 10 * K4);
    CHECK(a.allocate(0) == 0u);
    CHECK(a.used_bytes() == 6 * K4);
}

TEST_CASE("exactly the capacity fits; one block more does not") {
    ExtentAllocator a(8 * K4);
    must_allocate(a, 5 * K4 - 10);       // 5 blocks
    CHECK_FALSE(a.allocate(3 * K4 + 1)); // 4 blocks, only 3 free
    must_allocate(a, 3 * K4);
    CHECK(a.free_bytes() == 0);
    CHECK(a.largest_free() == 0);
    CHECK_FALSE(a.allocate(1));
    CHECK_FALSE(a.allocate(UINT64_MAX)); // rounding up must not wrap around
}

TEST_CASE("released neighbours merge back into one extent, in any order") {
    std::vector<int> order{0, 1, 2, 3, 4};
    do {
        ExtentAllocator a(5 * K4);
        std::vector<uint64_t> offs;
        for (int i = 0; i < 5; ++i) offs.push_back(must_allocate(a, K4));
        REQUIRE(a.free_bytes() == 0);
        for (int i : order) a.release(offs[static_cast<size_t>(i)], K4);
        CHECK(a.free_extents() == 1);
        CHECK(a.largest_free() == 5 * K4);
        CHECK(a.free_bytes() == 5 * K4);
    } while (std::next_permutation(order.begin(), order.end()));
}

TEST_CASE("best fit: the smallest hole that fits is used, larger holes stay whole") {
    ExtentAllocator a(32 * K4);
    uint64_t a1 = must_allocate(a, 4 * K4);
    must_allocate(a, K4); // keeps the holes apart
    uint64_t a2 = must_allocate(a, 2 * K4);
    must_allocate(a, K4);
    a.release(a1, 4 * K4); // hole of 4 blocks at a1
    a.release(a2, 2 * K4); // hole of 2 blocks at a2
    CHECK(must_allocate(a, 2 * K4) == a2);
    CHECK(must_allocate(a, 3 * K4) == a1); // the 4-block hole, the tail wins nothing
    CHECK(must_allocate(a, K4) == a1 + 3 * K4);
}

TEST_CASE("fragmented free space refuses a file larger than every hole") {
    ExtentAllocator a(8 * K4);
    std::vector<uint64_t> offs;
    for (int i = 0; i < 8; ++i) offs.push_back(must_allocate(a, K4));
    for (int i = 0; i < 8; i += 2) a.release(offs[static_cast<size_t>(i)], K4);
    CHECK(a.free_bytes() == 4 * K4);
    CHECK(a.free_extents() == 4);
    CHECK(a.largest_free() == K4);
    CHECK_FALSE(a.allocate(2 * K4)); // enough bytes, none contiguous
    a.release(offs[1], K4);          // joins holes 0, 1 and 2
    CHECK(a.largest_free() == 3 * K4);
    CHECK(must_allocate(a, 2 * K4 + 1) == 0);
}

TEST_CASE("reserve takes exactly a free range, and only a free aligned one") {
    ExtentAllocator a(16 * K4);
    CHECK(a.reserve(4 * K4, 2 * K4));
    CHECK(a.free_extents() == 2); // split around the range
    CHECK(a.used_bytes() == 2 * K4);
    CHECK_FALSE(a.reserve(5 * K4, K4));      // inside the reserved range
    CHECK_FALSE(a.reserve(3 * K4, 2 * K4));  // overlaps its start
    CHECK_FALSE(a.reserve(100, K4));         // unaligned
    CHECK_FALSE(a.reserve(15 * K4, 2 * K4)); // runs past the end
    CHECK_FALSE(a.reserve(17 * K4, K4));     // starts past the end
    CHECK(a.reserve(0, 4 * K4));             // the whole hole before it
    CHECK(a.reserve(6 * K4, 10 * K4));       // the whole hole after it
    CHECK(a.free_bytes() == 0);
    CHECK(a.reserve(0, 0)); // an empty file needs no room
    a.release(4 * K4, 2 * K4);
    CHECK(must_allocate(a, 2 * K4) == 4 * K4);
}

TEST_CASE("random allocations and releases keep extents disjoint and the sums exact") {
    constexpr uint64_t blocks = 512;
    ExtentAllocator a(blocks * K4);
    std::mt19937_64 rng(42);
    std::map<uint64_t, uint64_t> used; // offset -> length asked for
    std::vector<bool> taken(blocks, false);
    for (int step = 0; step < 20000; ++step) {
        if (used.empty() || rng() % 3 != 0) {
            uint64_t len = 1 + rng() % (12 * K4);
            auto off = a.allocate(len);
            if (!off) {
                CHECK(a.largest_free() < ExtentAllocator::aligned(len));
                continue;
            }
            for (uint64_t b = *off / K4; b < (*off + ExtentAllocator::aligned(len)) / K4; ++b) {
                REQUIRE(b < blocks);
                REQUIRE_FALSE(taken[b]);
                taken[b] = true;
            }
            used.emplace(*off, len);
        } else {
            auto it = used.begin();
            std::advance(it, static_cast<long>(rng() % used.size()));
            for (uint64_t b = it->first / K4;
                 b < (it->first + ExtentAllocator::aligned(it->second)) / K4; ++b)
                taken[b] = false;
            a.release(it->first, it->second);
            used.erase(it);
        }
        uint64_t want =
            std::accumulate(used.begin(), used.end(), uint64_t{0}, [](uint64_t s, const auto& kv) {
                return s + ExtentAllocator::aligned(kv.second);
            });
        REQUIRE(a.used_bytes() == want);
    }
    for (const auto& [off, len] : used) a.release(off, len);
    CHECK(a.free_extents() == 1);
    CHECK(a.free_bytes() == blocks * K4);
}
