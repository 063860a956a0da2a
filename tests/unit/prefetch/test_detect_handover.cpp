// SPDX-License-Identifier: MIT
// A detected job goes live without losing an open. Detection works on its
// own thread; while it builds the job it found, the loader goes on opening
// files, and those opens reach only detection's queue. They used to be
// dropped there, so the job's tracker began where detection last looked
// while the loader was hundreds of files further on: every later open of
// the epoch fell outside the tracker's window and the job fell back (a CI
// run of tests/prefetch/test_detect.py, on a loaded machine). Here the
// build is held still with the engine's test hook while the loader opens
// 400 files, so the gap is certain rather than a matter of timing.
#include "small_engine.hpp"
#include "clairfs/control/controller.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <latch>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace clairfs;
using namespace std::chrono_literals;

TEST_CASE("the opens made while a detected job is built reach its tracker") {
    test::Dataset d(3000); // 1000 in class0
    const std::vector<index::NodeId> order = test::sorted_ids(d, "class0/");
    const auto engine_ptr = test::small_engine(d);
    prefetch::Engine& engine = *engine_ptr;
    control::Controller control(d.idx, engine);
    control.enable_detection({});

    std::atomic<bool> building{false};
    std::latch release{1};
    test::OpenAtEnd opener{release}; // however the case ends
    engine.set_prepare_hook([&] {
        building = true;
        release.wait();
    });
    control.start_detection();

    // One loader process, no workers: this test's own pid, so that the
    // engine reads a real process from /proc.
    const auto pid = static_cast<uint32_t>(::getpid());
    size_t next = 0;
    auto open_until = [&](size_t end) {
        for (; next < end; ++next) (void)engine.opened(order[next], pid);
    };
    // Enough for detection to find and confirm the sequential job.
    while (!building && next < 500) {
        open_until(next + 50);
        std::this_thread::sleep_for(20ms);
    }
    REQUIRE(test::eventually([&] { return building.load(); }, 30s));
    const size_t at_detection = next;
    // The loader goes on while the job is built: these reach only the
    // detector's queue.
    open_until(at_detection + 400);
    release.count_down();
    REQUIRE(test::eventually([&] { return engine.active_jobs() == 1; }, 30s));
    // The rest of the epoch, with the job live.
    open_until(order.size());

    auto st = nlohmann::json::parse(control.status_text());
    INFO(st.dump(2));
    CHECK(st["registered"] == "detected");
    CHECK(st["jobs"][0]["loaders"][0]["root"] == "class0");
    CHECK(st["mode"] == "clairvoyant");
    const auto& loader = st["jobs"][0]["loaders"][0];
    // Every open since detection, the held ones included, was predicted.
    CHECK(loader["run_opens"].get<uint64_t>() == order.size());
    CHECK(loader["run_matched"] == loader["run_opens"]);
    engine.set_prepare_hook(nullptr);
    control.stop_detection();
    engine.stop();
}
