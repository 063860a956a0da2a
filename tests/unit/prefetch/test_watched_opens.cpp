// SPDX-License-Identifier: MIT
// Opens told after the fact (EngineOptions::watch_opens, --opens fanotify):
// watched_open() stands for an OPEN, watched_close() for the close that
// ends it, and only the last close of a file the RAM tier holds asks for
// its pages to go (one copy); the caller drops them and reports back.
// Closes the engine never saw opened (opens made before the watch began,
// whose RELEASE counted them already) never take the count below zero.
#include "clairfs/prefetch/engine.hpp"
#include "dataset.hpp"

#include <nlohmann/json.hpp>

using namespace clairfs;

namespace {

struct WatchedMount {
    test::Dataset d{24};
    prefetch::Engine engine;

    // Opens told by the watcher (--opens fanotify) with this one copy.
    explicit WatchedMount(prefetch::EngineOptions::OneCopy mode)
        : WatchedMount([mode] {
              prefetch::EngineOptions o;
              o.watch_opens = true;
              o.push_ahead = true;
              o.one_copy = mode;
              return o;
          }()) {}
    // Any other way of following opens; a 64 MiB tier and 2 fetch threads.
    explicit WatchedMount(prefetch::EngineOptions o)
        : engine(d.idx, d.root_fd, [&o] {
              o.mem = 64 << 20;
              o.fetch_threads = 2;
              return o;
          }()) {
        engine.set_pusher([](index::NodeId, const cache::Blob&) { return 0; });
        engine.start();
    }
    ~WatchedMount() { engine.stop(); }

    void fill() {
        for (index::NodeId id : d.ids) {
            cache::BlobRef b;
            REQUIRE(engine.bytes_of(id, b) == 0);
        }
    }
    nlohmann::json prefetch() const {
        nlohmann::json out;
        engine.status(out);
        return out["prefetch"];
    }
};

} // namespace

TEST_CASE("watched opens: the last close of a held file asks for a drop, no earlier one") {
    WatchedMount m(prefetch::EngineOptions::OneCopy::always);
    m.fill();
    const index::NodeId f = m.d.ids[2];
    m.engine.watched_open(f, 10);
    m.engine.watched_open(f, 11);
    CHECK_FALSE(m.engine.watched_close(f)); // the other open still reads it
    CHECK(m.engine.watched_close(f));
    m.engine.close_dropped(true);
    // A close with no open told: the count stays at zero, and the next
    // open and close still pair up.
    CHECK_FALSE(m.engine.watched_close(f));
    m.engine.watched_open(f, 12);
    CHECK(m.engine.watched_close(f));
    m.engine.close_dropped(false);
    auto p = m.prefetch();
    CHECK(p["close_drops"] == 1);
    CHECK(p["close_drop_errors"] == 1);
}

TEST_CASE("watched opens: a file the RAM tier lacks keeps its pages") {
    WatchedMount m(prefetch::EngineOptions::OneCopy::always);
    for (index::NodeId id : m.d.ids) {
        m.engine.watched_open(id, 10);
        CHECK_FALSE(m.engine.watched_close(id));
    }
}

TEST_CASE("watched opens: without one copy nothing is dropped") {
    WatchedMount m(prefetch::EngineOptions::OneCopy::never);
    m.fill();
    for (index::NodeId id : m.d.ids) {
        m.engine.watched_open(id, 10);
        m.engine.read_from_start(id); // not watched: nothing to learn
        CHECK_FALSE(m.engine.watched_close(id));
    }
    auto p = m.prefetch();
    CHECK(p["close_drops"] == 0);
    CHECK(p["open_kept"] == 0);
}

// The sampling of push_on_open() (and push_due(), which shares it): 1 open
// in 16 watched; once 64 watched opens all needed a READ (the kernel drops
// every file), 1 in 64.
TEST_CASE("watched opens: 1 in 16 while learning, 1 in 64 once the kernel drops them all") {
    WatchedMount m([] {
        prefetch::EngineOptions o;
        o.open_push = true;
        return o;
    }());
    m.fill();
    test::Dataset& d = m.d;
    prefetch::Engine& engine = m.engine;
    auto every = [&] { return m.prefetch()["open_watch_every"].get<uint64_t>(); };
    // Opens then releases, each watched one with a READ (served > 0: the
    // kernel had dropped it). Returns how many of `n` opens were watched.
    auto opens = [&](size_t n) {
        size_t watched = 0;
        for (size_t i = 0; i < n; ++i) {
            const index::NodeId id = d.ids[i % d.ids.size()];
            cache::BlobRef b = engine.opened(id, 7);
            auto how = engine.push_on_open(id, b);
            if (how == prefetch::OpenPush::watched) ++watched;
            engine.released(id, how == prefetch::OpenPush::watched ? 1 : 0, how);
        }
        return watched;
    };
    opens(d.ids.size()); // first opens since the mount: pushed, nothing learnt
    CHECK(every() == 16);
    CHECK(opens(640) == 40);
    // 40 watched so far, all dropped: below the two spans it takes.
    CHECK(every() == 16);
    opens(16 * 24);
    CHECK(every() == 64);
    const size_t w = opens(64 * 20);
    CHECK(w >= 19);
    CHECK(w <= 21);
}
