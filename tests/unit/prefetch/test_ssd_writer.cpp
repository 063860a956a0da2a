// SPDX-License-Identifier: MIT
// The SSD writer against a RAM tier standing in for the SSD: what it queues,
// what it hands back while a write is pending, what it refuses, and that a
// clean shutdown writes everything it took.
#include "prefetch/ssd_writer.hpp"
#include "clairfs/cache/ram_tier.hpp"

#include <chrono>
#include <cstring>
#include <doctest/doctest.h>
#include <latch>
#include <thread>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

cache::BlobRef blob_of(uint64_t size, char fill) {
    auto b = cache::Blob::make(size);
    memset(b->bytes.get(), fill, size);
    return b;
}

// A tier whose put() waits for the test: holds the writer inside a write.
class GatedTier final : public cache::Tier {
public:
    explicit GatedTier(uint64_t capacity) : inner_(capacity) {}
    const char* name() const override { return "gated"; }
    cache::BlobRef get(index::NodeId id) override { return inner_.get(id); }
    cache::BlobRef peek(index::NodeId id) const override { return inner_.peek(id); }
    bool contains(index::NodeId id) const override { return inner_.contains(id); }
    bool put(index::NodeId id, cache::BlobRef b) override {
        entered.count_down();
        open.wait();
        return inner_.put(id, std::move(b));
    }
    uint64_t evict(index::NodeId id) override { return inner_.evict(id); }
    void held(std::vector<index::NodeId>& out) const override { inner_.held(out); }
    cache::TierStats stats() const override { return inner_.stats(); }

    std::latch entered{1};
    std::latch open{1};

private:
    cache::RamTier inner_;
};

bool eventually(auto cond) {
    for (int i = 0; i < 2000; ++i) {
        if (cond()) return true;
        std::this_thread::sleep_for(1ms);
    }
    return cond();
}

} // namespace

TEST_CASE("queued files reach the tier; a pending file is handed back meanwhile") {
    GatedTier ssd(1 << 20);
    prefetch::SsdWriter w(ssd, 1 << 20);
    w.start();
    auto a = blob_of(1000, 'a'), b = blob_of(2000, 'b');
    REQUIRE(w.enqueue(1, a));
    REQUIRE(w.enqueue(2, b));
    CHECK_FALSE(w.enqueue(2, b)); // already queued
    ssd.entered.wait();           // the writer is inside put(1)
    CHECK(w.pending(1));
    CHECK(w.pending(2));
    CHECK(w.peek(2) == b);
    CHECK(w.peek(3) == nullptr);
    CHECK(w.stats().pending_bytes == 3000);
    ssd.open.count_down();
    REQUIRE(eventually([&] { return w.stats().pending_bytes == 0; }));
    CHECK(ssd.contains(1));
    CHECK(ssd.contains(2));
    CHECK_FALSE(w.pending(1));
    CHECK(w.stats().written == 2);
}

TEST_CASE("the byte bound skips files, but always lets one through") {
    GatedTier ssd(1 << 20);
    prefetch::SsdWriter w(ssd, 1500);
    w.start();
    REQUIRE(w.enqueue(1, blob_of(4000, 'x'))); // larger than the bound, queue empty
    ssd.entered.wait();
    CHECK_FALSE(w.enqueue(2, blob_of(100, 'y'))); // 4000 pending already
    CHECK(w.stats().skipped == 1);
    ssd.open.count_down();
    REQUIRE(eventually([&] { return w.stats().pending_bytes == 0; }));
    CHECK(w.enqueue(2, blob_of(100, 'y')));
}

TEST_CASE("a full tier refuses, and that is counted, not retried") {
    cache::RamTier ssd(1000);
    prefetch::SsdWriter w(ssd, 1 << 20);
    w.start();
    REQUIRE(w.enqueue(1, blob_of(800, 'a')));
    REQUIRE(w.enqueue(2, blob_of(800, 'b')));
    REQUIRE(eventually([&] { return w.stats().pending_bytes == 0; }));
    CHECK(w.stats().written == 1);
    CHECK(w.stats().refused == 1);
    CHECK(ssd.stats().bytes == 800);
}

TEST_CASE("destruction writes everything still queued") {
    cache::RamTier ssd(1 << 20);
    {
        prefetch::SsdWriter w(ssd, 1 << 20);
        for (index::NodeId id = 0; id < 50; ++id) REQUIRE(w.enqueue(id, blob_of(100, 'z')));
        w.start(); // nothing written before this; all of it before the destructor returns
    }
    CHECK(ssd.stats().entries == 50);
}
