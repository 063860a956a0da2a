// SPDX-License-Identifier: MIT
#include "clairfs/sys/normal_thread.hpp"

#include <doctest/doctest.h>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <thread>

namespace {

// Runs `start` on a thread that first takes SCHED_IDLE, as a ring thread
// does; returns the policy the thread `start` made runs at.
template <typename Start> int policy_started_from_idle(Start start) {
    int err = -1, policy = -1;
    std::thread idle([&] {
        sched_param none{};
        err = pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
        std::thread t = start([&] { policy = sched_getscheduler(0); });
        t.join();
    });
    idle.join();
    REQUIRE(err == 0);
    return policy;
}

} // namespace

TEST_CASE("a thread started from a SCHED_IDLE thread inherits it, unless normal_thread starts it") {
    clairfs::sys::start_thread_starter();
    clairfs::sys::start_thread_starter(); // idempotent
    // What std::thread does, and why normal_thread exists.
    CHECK(policy_started_from_idle([](auto body) { return std::thread(body); }) == SCHED_IDLE);
    CHECK(policy_started_from_idle([](auto body) { return clairfs::sys::normal_thread(body); }) ==
          SCHED_OTHER);
    // From a normal thread it is a plain start.
    int policy = -1;
    clairfs::sys::normal_thread([&] { policy = sched_getscheduler(0); }).join();
    CHECK(policy == SCHED_OTHER);
}

TEST_CASE("normal_thread runs the body it is given, and starts many") {
    int sum = 0;
    for (int i = 1; i <= 50; ++i) {
        std::thread t = clairfs::sys::normal_thread([&sum, i] { sum += i; });
        t.join();
    }
    CHECK(sum == 50 * 51 / 2);
}
