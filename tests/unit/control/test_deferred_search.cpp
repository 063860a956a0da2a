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

TEST_CASE("a deferred search runs when the budget allows it, with no open after") {
    test::Dataset d{300};
    auto engine = test::small_engine(d);
    control::Controller control(d.idx, *engine);
    std::atomic<double> clock{1000};
    control::DetectorOptions opt;
    // 1% of a core, saving up next to nothing: the first search overdraws
    // the account by its own CPU, and the next waits a hundred times that
    // on the test's clock, which stands still until the case moves it.
    opt.cpu_share = 0.01;
    opt.cpu_window_s = 1e-6;
    opt.search.seeds.clear(); // no deep chain search to take the thread
    opt.clock = [&clock] { return clock.load(); };
    control.enable_detection(opt);
    control.start_detection();
    auto detection = [&] {
        return nlohmann::json::parse(control.status_text())["detection"];
    };

    // Two readers, one after the other, in an order no job explains.
    std::vector<index::NodeId> files = d.ids;
    std::shuffle(files.begin(), files.end(), std::mt19937(7));
    test::LiveProcess a, b;
    for (size_t k = 0; k < 64; ++k) (void)engine->opened(files[k], a.id());
    REQUIRE(test::eventually([&] { return detection()["searches"].get<int>() >= 1; }, 30s));
    REQUIRE(test::eventually([&] { return detection()["state"] == "watching"; }, 30s));
    const int before = detection()["searches"].get<int>();
    // The second reader is fresh evidence: a search is due, and deferred.
    for (size_t k = 64; k < 128; ++k) (void)engine->opened(files[k], b.id());
    REQUIRE(test::eventually([&] { return detection()["searches_deferred"].get<int>() >= 1; },
                             30s));
    // Held while the budget says wait (the thread wakes once a second).
    std::this_thread::sleep_for(2500ms);
    nlohmann::json held = detection();
    INFO(held.dump());
    CHECK(held["searches"].get<int>() == before);
    CHECK(held["next_search_in_seconds"].is_number());

    // The account refills: the search runs without another open.
    clock = clock.load() + 1e6;
    CHECK(test::eventually([&] { return detection()["searches"].get<int>() > before; }, 10s));
    nlohmann::json ran = detection();
    INFO(ran.dump());
    CHECK(ran["next_search_in_seconds"].is_null());
    CHECK(ran["result"].get<std::string>().find("2 processes") != std::string::npos);

    control.stop_detection();
    engine->stop();
}
