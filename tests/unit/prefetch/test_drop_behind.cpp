// SPDX-License-Identifier: MIT
// Drop-behind as the engine decides it (PageCache::weigh_chunk_room): a
// sequential reader's pages of files held by chunk leave the page cache
// once passed, while those files would take more than half the room the
// page cache has, and stay again once they fit in a third. The room is a
// number the test sets; the kernel is the range dropper's log. And the
// drop thread's stop, bounded when a drop hangs.
#include "clairfs/prefetch/chunk_store.hpp"
#include "clairfs/prefetch/engine.hpp"
#include "chunk_reads.hpp"
#include "dataset.hpp"
#include "prefetch/chunks/drop_behind.hpp"

#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

// Sample 0 is the shard (2 MiB: 32 chunks of 64 KiB), sample 1 a small file.
struct DropBehindMount {
    test::Dataset d{2};
    std::atomic<uint64_t> room{UINT64_MAX - 1};
    std::mutex mu;
    std::vector<uint64_t> dropped; // offsets
    std::unique_ptr<prefetch::Engine> engine;
    index::NodeId shard = 0;

    DropBehindMount() {
        d.resize({2 << 20, 1000});
        shard = d.id(0);
        prefetch::EngineOptions o;
        o.mem = 8 << 20;
        o.max_file = 100'000;
        o.chunk_size = 64 << 10;
        o.fetch_threads = 2;
        o.drop_behind = prefetch::EngineOptions::When::automatic; // the mount's default
        engine = std::make_unique<prefetch::Engine>(d.idx, d.root_fd, o);
        REQUIRE(engine->chunked(shard));
        engine->set_range_dropper([this](index::NodeId, uint64_t off, uint64_t) {
            std::lock_guard lk(mu);
            dropped.push_back(off);
            return 0;
        });
        engine->set_room_probe([this] { return room.load(); });
        engine->start();
    }
    ~DropBehindMount() {
        engine->stop();
        engine.reset();
    }
    bool wait_on(bool want) {
        return test::eventually([&] { return engine->chunks()->drop_behind() == want; });
    }
    // The whole shard in 64 KiB READs, as a sequential reader makes them.
    void stream() {
        std::string out(64 << 10, '\0');
        for (uint64_t off = 0; off < (2 << 20); off += out.size())
            REQUIRE(test::read_chunks(*engine->chunks(), shard, off, out.size(), out.data()) ==
                    static_cast<ssize_t>(out.size()));
    }
    // The drops made once the drop thread has had its turn: `want` of them
    // are waited for (a loaded host may take longer than any fixed pause),
    // then 50 ms more, for any beyond them to show.
    size_t drops(size_t want) {
        auto count = [this] {
            std::lock_guard lk(mu);
            return dropped.size();
        };
        test::eventually([&] { return count() >= want; });
        std::this_thread::sleep_for(50ms);
        return count();
    }
};

} // namespace

TEST_CASE("drop-behind: on while the chunked files exceed half the page cache's room") {
    DropBehindMount m;
    // Room for the shard ten times over: its pages stay for the next epoch.
    m.room = 20 << 20;
    std::this_thread::sleep_for(1100ms); // weighed at least once with this room
    CHECK_FALSE(m.engine->chunks()->drop_behind());
    m.stream();
    CHECK(m.drops(0) == 0);

    // 2 MiB of chunked files, 3 MiB of room: over half, so on.
    m.room = 3 << 20;
    REQUIRE(m.wait_on(true));
    m.stream();
    CHECK(m.drops(16) == 16); // entering chunks 16 .. 31 dropped chunks 0 .. 15 (1 MiB behind)
    nlohmann::json out;
    m.engine->status(out);
    CHECK(out["chunks"]["drop_behind"] == true);
    CHECK(out["chunks"]["dropped_behind"] == 16);

    // Between a third and a half: stays on (no switching at every look).
    m.room = 5 << 20; // 5 MiB
    std::this_thread::sleep_for(1100ms);
    CHECK(m.engine->chunks()->drop_behind());
    // Within a third: off again.
    m.room = 8 << 20;
    REQUIRE(m.wait_on(false));
    m.stream();
    CHECK(m.drops(16) == 16);
}

// At unmount the session's loop has ended before the engine stops: a drop
// waiting for a page a READ in flight has locked waits until the unmount
// aborts that READ, which comes after the stop. So stop() gives up after
// its bound, as the fetch pool's does, rather than hang the unmount.
TEST_CASE("drop-behind: a drop stuck past the bound makes stop() false, not a hang") {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<int> calls{0};
    // Left undestroyed, as stop()'s contract asks once it returned false.
    auto* d = new prefetch::DropBehind([&](index::NodeId, uint64_t, uint64_t) {
        ++calls;
        released.wait();
        return 0;
    });
    d->start();
    d->queue(1, 0, 1 << 20);
    d->queue(1, 1 << 20, 1 << 20); // queued behind the stuck one: never dropped
    REQUIRE(test::eventually([&] { return calls == 1; }));
    auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(d->stop(100ms));
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    release.set_value(); // the abort: the drop returns, and the thread ends
    // Counted once the detached thread runs again: waited for, not slept
    // for (50 ms was too short beside two busy loops, 1 run of 30).
    CHECK(test::eventually([&] { return d->dropped() == 1; }));
    CHECK(calls == 1); // the range queued behind it is left: the mount is going

    // Not stuck: stop() joins at once, and what is queued is left.
    std::atomic<int> fast{0};
    prefetch::DropBehind ok([&](index::NodeId, uint64_t, uint64_t) {
        ++fast;
        return 0;
    });
    ok.start();
    ok.queue(2, 0, 4096);
    CHECK(test::eventually([&] { return ok.dropped() == 1; }));
    CHECK(ok.stop(100ms));
    ok.queue(2, 4096, 4096); // after stop: refused
    CHECK(fast == 1);
}
