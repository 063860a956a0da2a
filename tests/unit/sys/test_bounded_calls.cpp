// SPDX-License-Identifier: MIT
// BoundedCalls: a call that hangs costs its caller the bound, never the
// thread of the next caller, and releases what it holds once it returns.
#include "clairfs/sys/bounded_calls.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <latch>
#include <thread>

using namespace clairfs;
using namespace std::chrono_literals;

TEST_CASE("a call in time returns its result") {
    sys::BoundedCalls calls(2000ms, 4);
    int result = 0;
    bool abandoned = false;
    CHECK(calls.run({[&] { result = 7; }, [&] { abandoned = true; }}));
    CHECK(result == 7);
    CHECK_FALSE(abandoned);
    CHECK(calls.timeouts() == 0);
}

TEST_CASE("a hung call times out, the next caller is served, and the hung one is released") {
    sys::BoundedCalls calls(200ms, 4);
    auto release = std::make_shared<std::latch>(1);
    auto released = std::make_shared<std::atomic<bool>>(false);
    auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(calls.run({[release] { release->wait(); }, [released] { *released = true; }}));
    CHECK(std::chrono::steady_clock::now() - t0 >= 200ms);
    CHECK(calls.timeouts() == 1);

    // Another thread serves the next call while the first is stuck.
    int result = 0;
    CHECK(calls.run({[&] { result = 1; }, [] {}}));
    CHECK(result == 1);

    CHECK_FALSE(released->load());
    release->count_down();
    for (int i = 0; i < 200 && !released->load(); ++i) std::this_thread::sleep_for(10ms);
    CHECK(released->load());
}

TEST_CASE("with every thread stuck, a queued call times out and never runs") {
    sys::BoundedCalls calls(100ms, 1);
    auto release = std::make_shared<std::latch>(1);
    CHECK_FALSE(calls.run({[release] { release->wait(); }, [] {}}));
    auto ran = std::make_shared<std::atomic<bool>>(false);
    CHECK_FALSE(calls.run({[ran] { *ran = true; }, [] {}}));
    CHECK(calls.timeouts() == 2);
    release->count_down();
    std::this_thread::sleep_for(100ms);
    CHECK_FALSE(ran->load());
}

TEST_CASE("bound 0 runs on the caller's thread") {
    sys::BoundedCalls calls(0ms, 1);
    std::thread::id where;
    CHECK(calls.run({[&] { where = std::this_thread::get_id(); }, [] {}}));
    CHECK(where == std::this_thread::get_id());
}

TEST_CASE("an exception inside a call does not escape its thread") {
    sys::BoundedCalls calls(1000ms, 1);
    CHECK(calls.run({[] { throw std::runtime_error("boom"); }, [] {}}));
    int result = 0;
    CHECK(calls.run({[&] { result = 3; }, [] {}}));
    CHECK(result == 3);
}
