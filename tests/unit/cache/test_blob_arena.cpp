// SPDX-License-Identifier: MIT
// The blob arena: buffers inside one region, aligned, never overlapping,
// returned on release; a full arena hands out heap buffers and counts them;
// many threads making and dropping blobs leave every byte where it was put.
#include "clairfs/cache/blob.hpp"
#include "clairfs/cache/blob_arena.hpp"
#include "sizes.hpp"

#include <algorithm>
#include <cstring>
#include <doctest/doctest.h>
#include <random>
#include <thread>
#include <vector>

using namespace clairfs;
using test::K4;

TEST_CASE("the arena gives aligned, disjoint buffers inside its region until it is full") {
    cache::BlobArena arena(64 * K4);
    std::vector<std::pair<char*, uint64_t>> got;
    for (uint64_t len : {K4, 3 * K4, 16 * K4, 2 * K4, 8 * K4}) {
        char* p = arena.allocate(len);
        REQUIRE(p != nullptr);
        CHECK(reinterpret_cast<uintptr_t>(p) % K4 == 0);
        got.emplace_back(p, len);
    }
    std::sort(got.begin(), got.end());
    for (size_t i = 1; i < got.size(); ++i)
        CHECK(got[i - 1].first + got[i - 1].second <= got[i].first);
    CHECK(got.back().first + got.back().second - got.front().first <= 64 * K4);
    CHECK(arena.stats().used == 30 * K4);
    CHECK(arena.allocate(35 * K4) == nullptr); // 34 blocks left
    char* rest = arena.allocate(34 * K4);
    CHECK(rest != nullptr);
    CHECK(arena.allocate(K4) == nullptr);
    arena.release(rest, 34 * K4);
    for (auto& [p, len] : got) arena.release(p, len);
    CHECK(arena.stats().used == 0);
    CHECK(arena.allocate(64 * K4) != nullptr); // the freed pieces merged again
}

TEST_CASE("Blob::make draws from the arena, overflows to the heap, and gives back on free") {
    cache::BlobArena arena(8 * K4);
    {
        auto a = cache::Blob::make(5000, &arena); // two blocks
        auto b = cache::Blob::make(4 * K4, &arena);
        CHECK(a->capacity == 2 * K4);
        CHECK(arena.stats().used == 6 * K4);
        CHECK(arena.stats().overflows == 0);
        auto c = cache::Blob::make(3 * K4, &arena); // 2 blocks left: from the heap
        CHECK(arena.stats().overflows == 1);
        CHECK(arena.stats().used == 6 * K4);
        REQUIRE(c->bytes);
        std::memset(c->bytes.get(), 'c', c->size);
        // The zero tail holds for arena buffers as for heap ones, even over
        // bytes an earlier blob left behind.
        std::memset(a->bytes.get(), 'x', a->capacity);
    }
    CHECK(arena.stats().used == 0);
    auto d = cache::Blob::make(100, &arena);
    CHECK(std::all_of(d->bytes.get() + 100, d->bytes.get() + d->capacity,
                      [](char ch) { return ch == 0; }));
}

TEST_CASE("threads making and dropping blobs of assorted sizes keep every byte") {
    cache::BlobArena arena(256 * K4);
    auto work = [&](unsigned seed) {
        std::mt19937 rng(seed);
        std::vector<cache::BlobRef> held;
        for (int i = 0; i < 3000; ++i) {
            uint64_t size = std::uniform_int_distribution<uint64_t>(1, 40000)(rng);
            auto b = cache::Blob::make(size, &arena);
            char fill = static_cast<char>('a' + (size % 26));
            std::memset(b->bytes.get(), fill, size);
            held.push_back(b);
            if (held.size() > 6) {
                size_t k = std::uniform_int_distribution<size_t>(0, held.size() - 1)(rng);
                const cache::Blob& v = *held[k];
                char want = static_cast<char>('a' + (v.size % 26));
                REQUIRE(std::all_of(v.bytes.get(), v.bytes.get() + v.size,
                                    [want](char ch) { return ch == want; }));
                held.erase(held.begin() + static_cast<long>(k));
            }
        }
    };
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < 4; ++t) ts.emplace_back(work, t + 1);
    for (auto& t : ts) t.join();
    CHECK(arena.stats().used == 0);
}
