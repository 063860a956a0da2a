// SPDX-License-Identifier: MIT
// A search the CPU budget deferred runs once the budget allows it, whether
// or not another open comes: a tf.data job that waits at its epoch's end
// to be detected, or a loader at a barrier, opens nothing more until then.
// In a CI run prefetch_keras saw a search deferred 4 s and never run, as
// the detector judged only when opens came. The budget's clock here is the
// test's, moved by hand, so the deferral lasts exactly as long as the case
// says and no longer.
#include "small_engine.hpp"
#include "clairfs/control/controller.hpp"
#include "live_process.hpp"

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

// A detector whose first search overdraws its budget, and a second reader
// whose search is then deferred: the state both cases start from.
struct Deferred {
    test::Dataset d{300};
    std::unique_ptr<prefetch::Engine> engine = test::small_engine(d);
    control::Controller control{d.idx, *engine};
    std::atomic<double> clock{1000};
    std::vector<index::NodeId> files = d.ids;
    test::LiveProcess a, b;
    int before = 0; // searches run when the second reader's was deferred

    Deferred() {
        control::DetectorOptions opt;
        // 1% of a core, saving up next to nothing: the first search
        // overdraws the account by its own CPU, and the next waits a
        // hundred times that on the test's clock, which stands still until
        // the case moves it.
        opt.cpu_share = 0.01;
        opt.cpu_window_s = 1e-6;
        opt.search.seeds.clear(); // no deep chain search to take the thread
        opt.clock = [this] { return clock.load(); };
        control.enable_detection(opt);
        control.start_detection();
        // Two readers, one after the other, in an order no job explains.
        std::shuffle(files.begin(), files.end(), std::mt19937(7));
        for (size_t k = 0; k < 64; ++k) (void)engine->opened(files[k], a.id());
        REQUIRE(test::eventually([&] { return detection()["searches"].get<int>() >= 1; }, 30s));
        REQUIRE(test::eventually([&] { return detection()["state"] == "watching"; }, 30s));
        before = detection()["searches"].get<int>();
        // The second reader is fresh evidence: a search is due, and deferred.
        for (size_t k = 64; k < 128; ++k) (void)engine->opened(files[k], b.id());
        REQUIRE(test::eventually(
            [&] { return detection()["searches_deferred"].get<int>() >= 1; }, 30s));
    }
    ~Deferred() {
        control.stop_detection();
        engine->stop();
    }
    nlohmann::json detection() const {
        return nlohmann::json::parse(control.status_text())["detection"];
    }
};

} // namespace

TEST_CASE("a deferred search runs when the budget allows it, with no open after") {
    Deferred t;
    // Held while the budget says wait (the thread wakes once a second).
    std::this_thread::sleep_for(2500ms);
    nlohmann::json held = t.detection();
    INFO(held.dump());
    CHECK(held["searches"].get<int>() == t.before);
    CHECK(held["next_search_in_seconds"].is_number());

    // The account refills: the search runs without another open.
    t.clock = t.clock.load() + 1e6;
    CHECK(test::eventually([&] { return t.detection()["searches"].get<int>() > t.before; }, 10s));
    nlohmann::json ran = t.detection();
    INFO(ran.dump());
    CHECK(ran["next_search_in_seconds"].is_null());
    CHECK(ran["result"].get<std::string>().find("2 processes") != std::string::npos);
}

TEST_CASE("a deferred search whose processes were forgotten is no longer waited for") {
    Deferred t;
    // 512 newer processes (ids no process can have) of one open each push
    // both readers out of the detector's table: nothing is due any more,
    // and no search may run on so little. Before the deferral was ended
    // there, status said a search was due in 0 s once the budget refilled
    // and the detector thread woke without pause for it.
    for (uint32_t k = 0; k < 512; ++k)
        (void)t.engine->opened(t.files[128 + k % 172], 5'000'000 + k);
    t.clock = t.clock.load() + 1e6;
    CHECK(test::eventually([&] { return t.detection()["next_search_in_seconds"].is_null(); },
                           10s));
    nlohmann::json after = t.detection();
    INFO(after.dump());
    CHECK(after["searches"].get<int>() == t.before);
}
