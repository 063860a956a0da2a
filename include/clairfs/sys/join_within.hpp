// SPDX-License-Identifier: MIT
// Joining a thread that may be stuck in the kernel: at a daemon's stop, a
// thread waiting for a page a READ in flight has locked (a page-cache push
// or drop) waits until the unmount aborts that READ, and the unmount comes
// after the stop. So such threads are joined within a bound, and left
// behind past it; the daemon then exits around them, as around a fetch
// hung in the backing store.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

namespace clairfs::sys {

// Joins `t` once `done` (set by the thread as its last act) says it has
// returned, waiting at most `bound` (0: for as long as it takes). False,
// the thread detached and left running, if it has not returned by then:
// whatever it refers to must then outlive it (the daemon exits instead).
inline bool join_within(std::thread& t, const std::atomic<bool>& done,
                        std::chrono::milliseconds bound) {
    if (!t.joinable()) return true;
    if (bound.count() > 0) {
        const auto until = std::chrono::steady_clock::now() + bound;
        while (!done.load(std::memory_order_acquire)) {
            if (std::chrono::steady_clock::now() >= until) {
                t.detach();
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    t.join();
    return true;
}

} // namespace clairfs::sys
