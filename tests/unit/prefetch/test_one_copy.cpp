// SPDX-License-Identifier: MIT
// One copy (EngineOptions::one_copy): the last release of a file the RAM
// tier holds drops the kernel's pages of it, so its bytes are in memory
// once. "always" drops at every last release; "auto" only while the tier's
// bytes exceed half the room the page cache has, and stops once they fit
// in a third. The kernel is the invalidator's log here, the room a number
// the test sets.
#include "clairfs/prefetch/engine.hpp"
#include "dataset.hpp"

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

struct Kernel {
    std::mutex mu;
    std::multiset<index::NodeId> dropped, pushed;
    size_t drops(index::NodeId id) {
        std::lock_guard lk(mu);
        return dropped.count(id);
    }
    size_t total() {
        std::lock_guard lk(mu);
        return dropped.size();
    }
};

struct OneCopyMount {
    test::Dataset d{40};
    Kernel kernel;
    std::atomic<uint64_t> room{UINT64_MAX - 1};
    prefetch::Engine engine;

    explicit OneCopyMount(prefetch::EngineOptions::OneCopy mode)
        : engine(d.idx, d.root_fd, [mode] {
              prefetch::EngineOptions o;
              o.mem = 64 << 20;
              o.fetch_threads = 2;
              o.open_push = true;
              o.one_copy = mode;
              return o;
          }()) {
        engine.set_invalidator([this](index::NodeId id) {
            std::lock_guard lk(kernel.mu);
            kernel.dropped.insert(id);
            return 0;
        });
        engine.set_pusher([this](index::NodeId id, const cache::Blob&) {
            std::lock_guard lk(kernel.mu);
            kernel.pushed.insert(id);
            return 0;
        });
        engine.set_room_probe([this] { return room.load(); });
        engine.start();
    }
    ~OneCopyMount() { engine.stop(); }

    nlohmann::json one_copy() const {
        nlohmann::json out;
        engine.status(out);
        return out["prefetch"]["one_copy"];
    }
    // Every file into the RAM tier, as first-touch READs put them there.
    uint64_t fill() {
        uint64_t bytes = 0;
        for (index::NodeId id : d.ids) {
            cache::BlobRef b;
            REQUIRE(engine.bytes_of(id, b) == 0);
            bytes += b ? b->size : 0;
        }
        return bytes;
    }
    // One open and its release, as the FUSE layer makes them.
    void open_close(index::NodeId id) {
        cache::BlobRef b = engine.opened(id, 1);
        prefetch::OpenPush how = engine.push_on_open(id, b);
        b.reset(); // the open's reference, gone before its RELEASE
        engine.released(id, 0, how);
    }
    bool wait_dropping(bool want) {
        return test::eventually([&] { return one_copy()["dropping"].get<bool>() == want; });
    }
    // Until the engine has weighed the room once at `bytes` (about once a
    // second, later on a loaded host).
    bool wait_room(uint64_t bytes) {
        return test::eventually([&] { return one_copy()["room_bytes"] == bytes; }); // null until weighed
    }
};

} // namespace

TEST_CASE("one copy always: the last release of a held file drops its pages, no earlier one") {
    OneCopyMount m(prefetch::EngineOptions::OneCopy::always);
    CHECK(m.one_copy()["mode"] == "always");
    CHECK(m.one_copy()["dropping"] == true);
    m.fill();
    for (index::NodeId id : m.d.ids) m.open_close(id);
    for (index::NodeId id : m.d.ids) CHECK(m.kernel.drops(id) == 1);

    // Two opens of one file: the first release keeps the pages the other
    // open reads, the second drops them.
    const index::NodeId f = m.d.ids[3];
    cache::BlobRef a = m.engine.opened(f, 1), b = m.engine.opened(f, 2);
    auto ha = m.engine.push_on_open(f, a), hb = m.engine.push_on_open(f, b);
    CHECK(ha == prefetch::OpenPush::none); // pushed, nothing to learn
    m.engine.released(f, 0, ha);
    CHECK(m.kernel.drops(f) == 1);
    m.engine.released(f, 0, hb);
    CHECK(m.kernel.drops(f) == 2);
    nlohmann::json out;
    m.engine.status(out);
    CHECK(out["prefetch"]["close_drops"] == m.d.ids.size() + 1);
    CHECK(out["prefetch"]["open_pushes"] == m.d.ids.size() + 2); // every held open pushed
}

TEST_CASE("one copy always: a file the RAM tier lacks keeps its pages") {
    OneCopyMount m(prefetch::EngineOptions::OneCopy::always);
    // Nothing fetched: the kernel's pages (from READs) are the only copy.
    for (index::NodeId id : m.d.ids) m.open_close(id);
    CHECK(m.kernel.total() == 0);
}

TEST_CASE("one copy auto: drops while the tier's bytes exceed half the page cache's room") {
    OneCopyMount m(prefetch::EngineOptions::OneCopy::automatic);
    const uint64_t held = m.fill();
    REQUIRE(held > 0);
    // Room for both copies many times over: the kernel keeps its own.
    m.room = held * 10;
    REQUIRE(m.wait_dropping(false));
    REQUIRE(m.wait_room(held * 10)); // weighed at least once with this room
    for (index::NodeId id : m.d.ids) m.open_close(id);
    CHECK(m.kernel.total() == 0);

    // The tier's bytes would take more than half the room: drop.
    m.room = held * 3 / 2;
    REQUIRE(m.wait_dropping(true));
    for (index::NodeId id : m.d.ids) m.open_close(id);
    for (index::NodeId id : m.d.ids) CHECK(m.kernel.drops(id) == 1);

    // Between a third and a half: no switch back (the gap keeps a budget
    // near the line from flapping).
    m.room = held * 5 / 2;
    std::this_thread::sleep_for(2200ms);
    CHECK(m.one_copy()["dropping"] == true);
    // Within a third: both copies again.
    m.room = held * 4;
    REQUIRE(m.wait_dropping(false));
    CHECK(m.one_copy()["switches"] == 2);
    const size_t before = m.kernel.total();
    for (index::NodeId id : m.d.ids) m.open_close(id);
    CHECK(m.kernel.total() == before);
}

TEST_CASE("one copy never: no drop, whatever the room") {
    OneCopyMount m(prefetch::EngineOptions::OneCopy::never);
    m.room = 1;
    m.fill();
    std::this_thread::sleep_for(1100ms);
    for (index::NodeId id : m.d.ids) m.open_close(id);
    CHECK(m.kernel.total() == 0);
    CHECK(m.one_copy()["mode"] == "never");
}
