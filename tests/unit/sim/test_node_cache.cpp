// SPDX-License-Identifier: MIT
// The simulator's lazy Belady heap against a brute-force scan: under its
// contract (a key that moves later is told; one that moves earlier may be
// found late), victim() always names a file whose true key is the largest
// of the unpinned files held.
#include "sim/node_cache.hpp"

#include <doctest/doctest.h>
#include <map>
#include <random>
#include <vector>

using namespace clairfs::sim;

TEST_CASE("victim() is the unpinned file due last, whatever moved since") {
    std::mt19937 g(5);
    NodeCache c;
    std::vector<uint32_t> sizes(300, 100);
    c.set_sizes(sizes.data());
    std::map<uint32_t, uint64_t> truth; // held, unpinned -> its true key
    std::map<uint32_t, bool> pinned;
    auto due = [&](uint32_t f) { return truth.at(f); };
    for (int step = 0; step < 20000; ++step) {
        const uint32_t f = g() % 300;
        const int op = static_cast<int>(g() % 6);
        if (!c.holds(f)) {
            bool pin = g() % 10 == 0;
            uint64_t key = g() % 5 == 0 ? never : g() % 100000;
            c.add(f, key, pin, false);
            pinned[f] = pin;
            if (!pin) truth[f] = key;
        } else if (op == 0 && !pinned[f]) {
            truth[f] += 1 + g() % 1000; // opened: due later, told
            if (truth[f] > 200000) truth[f] = never;
            c.rekey(f, truth[f]);
        } else if (op == 1 && !pinned[f]) {
            truth[f] += 1 + g() % 1000; // the group passed it: later, told
            c.update_key(f, truth[f]);
        } else if (op == 2 && !pinned[f] && truth[f] == never) {
            truth[f] = g() % 100000; // a later epoch's order is known: earlier, untold
        } else if (op == 3) {
            auto [key, v] = c.victim(due);
            uint64_t best = 0;
            bool any = false;
            for (auto& [h, k] : truth) {
                best = std::max(best, k);
                any = true;
            }
            if (!any) {
                CHECK(v == UINT32_MAX);
                continue;
            }
            REQUIRE(v != UINT32_MAX);
            CHECK(key == best);
            CHECK(truth.at(v) == best);
            CHECK(!pinned[v]);
            if (g() % 2) {
                CHECK(c.evict(v) == 100);
                truth.erase(v);
                pinned.erase(v);
            }
        }
    }
    uint64_t bytes = 0;
    for (auto& [f, p] : pinned) bytes += c.holds(f) ? 100 : 0;
    CHECK(c.bytes() == bytes);
}

TEST_CASE("the page cache holds whole pages and drops the least recently used first") {
    // Three 5,000-byte files take two pages each: 24 KiB holds all three,
    // 20 KiB only two, which the 5,000 bytes a file alone would not show.
    Lru three(6 * Lru::page);
    for (uint32_t f = 0; f < 3; ++f) three.insert(f, 5000);
    for (uint32_t f = 0; f < 3; ++f) CHECK(three.hit(f));

    Lru two(5 * Lru::page);
    two.insert(0, 5000);
    two.insert(1, 5000);
    CHECK(two.hit(0)); // 0 is now the more recent: 1 goes next
    two.insert(2, 5000);
    CHECK(two.hit(0));
    CHECK_FALSE(two.hit(1));
    CHECK(two.hit(2));

    // A file larger than the whole cache is not held and evicts nothing.
    two.insert(3, 6 * Lru::page);
    CHECK_FALSE(two.hit(3));
    CHECK(two.hit(0));
    CHECK(two.hit(2));
}
