// SPDX-License-Identifier: MIT
// The fetch pool's bounds (--io-timeout): a demand for a fetch hung in the
// backing store answers EIO after the bound while other files are served,
// and stop() gives up on a hung thread instead of hanging the unmount.
#include "clairfs/prefetch/fetch_pool.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <latch>
#include <map>
#include <mutex>
#include <memory>
#include <stdexcept>

using namespace clairfs;
using namespace std::chrono_literals;
using prefetch::FetchPool;
using prefetch::FetchResult;

namespace {

constexpr index::NodeId hung = 1;

// Reads return a one-byte blob holding the id; node `hung` blocks until
// the latch opens.
struct HangingReader {
    std::shared_ptr<std::latch> release = std::make_shared<std::latch>(1);
    FetchPool::Reader reader() const {
        return [r = release](index::NodeId id, bool) {
            if (id == hung) r->wait();
            auto b = cache::Blob::make(1);
            b->bytes[0] = static_cast<char>(id);
            return FetchResult{0, b};
        };
    }
};

} // namespace

TEST_CASE("a demand for a hung fetch answers EIO after the bound; other files are served") {
    HangingReader r;
    FetchPool pool(r.reader(), 2, 8, {}, 150ms);
    FetchResult bad = pool.demand(hung);
    CHECK(bad.error == -EIO);
    CHECK(bad.blob == nullptr);
    FetchResult good = pool.demand(7);
    REQUIRE(good.error == 0);
    CHECK(good.blob->bytes[0] == 7);
    // A second reader of the hung file joins the same fetch and times out too.
    CHECK(pool.demand(hung).error == -EIO);
    CHECK(pool.stats().timeouts == 2);
    r.release->count_down();
    // Once the read returns, the file is served.
    FetchResult late = pool.demand(hung);
    CHECK(late.error == 0);
}

TEST_CASE("stop gives up on a hung fetch after its bound, and joins once it returns") {
    HangingReader r;
    auto pool = std::make_unique<FetchPool>(r.reader(), 2, 8, FetchPool::Completion{}, 100ms);
    CHECK(pool->demand(hung).error == -EIO);
    auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(pool->stop(200ms));
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    r.release->count_down();
    CHECK(pool->stop(5000ms));
}

TEST_CASE("a reader that throws fails its fetch with EIO; the thread serves on") {
    FetchPool pool(
        [](index::NodeId id, bool) -> FetchResult {
            if (id == hung) throw std::runtime_error("a broken reader");
            auto b = cache::Blob::make(1);
            b->bytes[0] = static_cast<char>(id);
            return FetchResult{0, b};
        },
        1, 8, {}, 2000ms);
    CHECK(pool.demand(hung).error == -EIO);
    FetchResult good = pool.demand(5);
    REQUIRE(good.error == 0);
    CHECK(good.blob->bytes[0] == 5);
}

TEST_CASE("the reader is told whether a reader waits for the fetch") {
    // A peer's home puts demanded fetches ahead of prefetches: the flag
    // must say which is which.
    std::mutex mu;
    std::map<index::NodeId, bool> seen;
    std::latch prefetched(1);
    FetchPool pool(
        [&](index::NodeId id, bool demanded) -> FetchResult {
            {
                std::lock_guard lk(mu);
                seen[id] = demanded;
            }
            if (id == 7) prefetched.count_down();
            return FetchResult{0, cache::Blob::make(1)};
        },
        1, 8, {}, 2000ms);
    REQUIRE(pool.prefetch(7));
    prefetched.wait();
    REQUIRE(pool.demand(9).error == 0);
    std::lock_guard lk(mu);
    CHECK(seen.at(7) == false);
    CHECK(seen.at(9) == true);
}
