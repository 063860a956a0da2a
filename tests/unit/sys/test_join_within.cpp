// SPDX-License-Identifier: MIT
// sys::join_within: a thread that has returned is joined; one still stuck
// after the bound is left behind (detached) and the call says so; with no
// bound it is waited for.
#include "clairfs/sys/join_within.hpp"

#include <doctest/doctest.h>
#include <future>
#include <memory>

using namespace clairfs;
using namespace std::chrono_literals;

TEST_CASE("join_within: joins a thread that returns, leaves one stuck past the bound") {
    std::atomic<bool> done{false};
    std::thread quick([&] { done.store(true, std::memory_order_release); });
    CHECK(sys::join_within(quick, done, 1000ms));
    CHECK_FALSE(quick.joinable());
    CHECK(sys::join_within(quick, done, 1000ms)); // nothing left to join

    // Shared with the thread, which outlives this scope's wait.
    auto gate = std::make_shared<std::promise<void>>();
    auto stuck_done = std::make_shared<std::atomic<bool>>(false);
    std::shared_future<void> open = gate->get_future().share();
    std::thread stuck([open, stuck_done] {
        open.wait();
        stuck_done->store(true, std::memory_order_release);
    });
    auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(sys::join_within(stuck, *stuck_done, 50ms));
    CHECK(std::chrono::steady_clock::now() - t0 >= 50ms);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK_FALSE(stuck.joinable()); // detached
    gate->set_value();
    // Up to 10 s: a loaded host may take long to run it again.
    for (int i = 0; i < 10000 && !stuck_done->load(); ++i) std::this_thread::sleep_for(1ms);
    CHECK(stuck_done->load());

    // No bound: waits for as long as it takes.
    std::atomic<bool> slow_done{false};
    std::thread slow([&] {
        std::this_thread::sleep_for(30ms);
        slow_done.store(true, std::memory_order_release);
    });
    CHECK(sys::join_within(slow, slow_done, 0ms));
    CHECK(slow_done.load());
}
