// SPDX-License-Identifier: MIT
// The engine's stop is bounded even while the scheduler is stuck in a
// page-cache push. In the daemon a push (FUSE_NOTIFY_STORE) waits for any
// page a READ in flight has locked, and nothing answers that READ once the
// session's loop has ended, which is before the engine stops: an unbounded
// join would hold the unmount for ever (sys::join_within, engine.cpp).
// Here the pusher blocks until the test lets it go, after the stop.
#include "clairfs/control/controller.hpp"
#include "dataset.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unistd.h>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

// A push that blocks until released, as one on a locked page does.
struct StuckPush {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    std::atomic<bool> entered{false};

    int push() {
        entered.store(true);
        std::unique_lock lk(mu);
        cv.wait(lk, [this] { return released; });
        return 0;
    }
    void release() {
        {
            std::lock_guard lk(mu);
            released = true;
        }
        cv.notify_all();
    }
};

} // namespace

TEST_CASE("a scheduler stuck in a page-cache push does not hold the engine's stop") {
    // Never destroyed, as in the daemon, which exits around the thread the
    // stop left behind: it still refers to the engine, and so to the index.
    auto* d = new test::Dataset(200);
    auto* stuck = new StuckPush;
    prefetch::EngineOptions opt;
    opt.mem = 64 << 20;
    opt.fetch_threads = 2;
    opt.push_ahead = true; // the scheduler pushes the files due next
    auto* engine = new prefetch::Engine(d->idx, d->root_fd, opt);
    engine->set_pusher([stuck](index::NodeId, const cache::Blob&) { return stuck->push(); });
    engine->start();
    auto* control = new control::Controller(d->idx, *engine);
    std::string why;
    REQUIRE(control->write_control(R"({"layout": "sorted", "sampler": "sequential", "batch_size": 4})",
                                   why) == 0);
    // Opens move the job on, and the rounds they make due push what is next.
    const auto pid = static_cast<uint32_t>(::getpid());
    const auto until = std::chrono::steady_clock::now() + 30s;
    for (size_t k = 0; !stuck->entered.load() && std::chrono::steady_clock::now() < until; ++k) {
        (void)engine->opened(d->ids[k % d->ids.size()], pid);
        std::this_thread::sleep_for(2ms);
    }
    REQUIRE(stuck->entered.load());
    // Without the bound this would wait for the release below, which comes
    // only after it: the test would hang until meson's timeout.
    CHECK_FALSE(engine->stop_within(200ms));
    stuck->release(); // the thread left behind ends on its own
}
