// SPDX-License-Identifier: MIT
// A registration builds its job (planners, the first epochs of every local
// rank, the tracker) holding no lock that an open, a status read or the
// running job needs: with the build held still in the engine's test hook,
// all of them complete. The time a real build takes for a million samples
// is measured by bench/open_latency.py, not asserted here.
#include "clairfs/control/controller.hpp"
#include "dataset.hpp"
#include "live_process.hpp"

#include <algorithm>
#include <future>
#include <latch>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

// Opens every file once in the order of a sequential job over the sorted
// layout (byte order of the paths), as its loader would, through the
// engine's open path, as process `reader`.
size_t open_in_order(prefetch::Engine& engine, const test::Dataset& d, uint32_t reader) {
    std::vector<size_t> order(d.ids.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [](size_t a, size_t b) { return test::sample_name(a) < test::sample_name(b); });
    size_t opened = 0;
    for (size_t i : order) {
        (void)engine.opened(d.ids[i], reader);
        ++opened;
    }
    return opened;
}

// Opens the gate however the test ends, so a failed check cannot leave the
// registering thread (and the test) waiting for good.
struct Gate {
    std::latch in_build{1}, open{1};
    ~Gate() { release(); }
    void release() {
        if (open.try_wait()) return;
        open.count_down();
    }
};

} // namespace

TEST_CASE("opens, status and the running job go on while a registration builds its job") {
    test::Dataset d(300);
    test::LiveProcess reader; // a job whose readers all exited is retired
    // Both registrations come from one process: the second replaces the
    // first, whose reader runs, only as its own writer's.
    test::LiveProcess writer;
    prefetch::EngineOptions opt;
    opt.mem = 1 << 20;
    opt.fetch_threads = 2;
    prefetch::Engine engine(d.idx, d.root_fd, opt);
    engine.start();
    control::Controller control(d.idx, engine);
    std::string why;
    REQUIRE(control.write_control(
                R"({"layout": "sorted", "sampler": "sequential", "seed": 1, "batch_size": 4})", why,
                writer.id()) == 0);
    REQUIRE(engine.mode() == track::Mode::clairvoyant);

    Gate gate;
    engine.set_prepare_hook([&] {
        gate.in_build.count_down();
        gate.open.wait();
    });
    std::future<int> second = std::async(std::launch::async, [&] {
        std::string w;
        return control.write_control(
            R"({"layout": "sorted", "seed": 2, "batch_size": 4, "epochs": 3})", w, writer.id());
    });
    gate.in_build.wait();

    // Each of these takes a lock a registration used to hold while it built.
    std::future<std::string> others = std::async(std::launch::async, [&] {
        size_t opened = open_in_order(engine, d, reader.id());
        std::string text = control.status_text();
        text += control.control_text();
        return std::to_string(opened) + "\n" + text;
    });
    REQUIRE(others.wait_for(30s) == std::future_status::ready);
    std::string seen = others.get();
    CHECK(seen.rfind("300\n", 0) == 0);
    CHECK(seen.find("\"registered\": true") != std::string::npos);
    CHECK(seen.find("\"seed\": 1") != std::string::npos); // still the first job
    CHECK(seen.find("\"match_rate\": 1.0") != std::string::npos);
    CHECK(engine.mode() == track::Mode::clairvoyant); // every open matched the first job
    CHECK(second.wait_for(0s) == std::future_status::timeout); // still building

    gate.release();
    REQUIRE(second.wait_for(30s) == std::future_status::ready);
    CHECK(second.get() == 0);
    CHECK(control.control_text().find("\"seed\": 2") != std::string::npos);
    std::string status = control.status_text();
    CHECK(status.find("\"registrations\": 2") != std::string::npos);
    engine.set_prepare_hook(nullptr);
    CHECK(control.write_control(R"({"unregister": true})", why) == 0);
    CHECK(engine.mode() == track::Mode::unregistered);
    engine.stop();
}
