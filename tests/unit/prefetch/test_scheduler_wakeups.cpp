// SPDX-License-Identifier: MIT
// The prefetch scheduler is woken by the opens only when a round is due:
// once the ranks have moved a sixteenth of the lead on (Scheduler::round_due).
// Woken by every open, as it was, it cost the daemon a context switch per
// file for rounds it then skipped (bench/RESULTS.md, issue 19). The opens
// here are paced like a loader's (2 ms apart), so a scheduler woken by
// each would run every 10 ms (its minimum gap between rounds), 80 times.
#include "clairfs/control/controller.hpp"
#include "dataset.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

nlohmann::json status(const control::Controller& c) {
    return nlohmann::json::parse(c.status_text());
}

} // namespace

TEST_CASE("the scheduler is woken once per round's worth of opens, not per open") {
    test::Dataset d(1000);
    prefetch::EngineOptions opt;
    opt.mem = 64 << 20; // the dataset fits: no eviction, no refetch
    opt.fetch_threads = 2;
    prefetch::Engine engine(d.idx, d.root_fd, opt);
    engine.start();
    control::Controller control(d.idx, engine);
    // batch 1024, no workers: a lead of 2,048 files, so a round is due
    // every 128 opens.
    std::string why;
    REQUIRE(control.write_control(R"({"layout": "sorted", "sampler": "sequential", "batch_size": 1024})",
                                  why) == 0);
    std::vector<size_t> order(d.ids.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [](size_t a, size_t b) { return test::sample_name(a) < test::sample_name(b); });

    // The first round prefetches the whole epoch; the count starts once
    // every fetch has landed.
    auto until = std::chrono::steady_clock::now() + 30s;
    while (status(control)["prefetch"]["prefetched"].get<uint64_t>() < d.ids.size() &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(5ms);
    auto before = status(control);
    REQUIRE(before["prefetch"]["prefetched"].get<uint64_t>() == d.ids.size());
    const uint64_t woken0 = before["prefetch"]["scheduler_wakeups"].get<uint64_t>();

    const auto pid = static_cast<uint32_t>(::getpid());
    for (size_t k = 0; k < 400; ++k) {
        (void)engine.opened(d.ids[order[k]], pid);
        std::this_thread::sleep_for(2ms);
    }
    auto after = status(control);
    INFO(after.dump(2));
    CHECK(after["mode"] == "clairvoyant");
    CHECK(after["jobs"][0]["loaders"][0]["run_matched"] == 400);
    // 400 opens: 3 rounds due (at 128, 256 and 384), and slack for a round
    // the first opens find due.
    const uint64_t woken = after["prefetch"]["scheduler_wakeups"].get<uint64_t>() - woken0;
    CHECK(woken >= 3);
    CHECK(woken <= 6);
    engine.stop();
}
