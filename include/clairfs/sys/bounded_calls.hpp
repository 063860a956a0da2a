// SPDX-License-Identifier: MIT
// Blocking calls into the backing store, made on threads of their own so
// that the FUSE thread that needs one waits at most a bound (--io-timeout).
// A read that never returns (a hung NFS server, a Lustre OST in recovery)
// then costs its reader EIO after the bound, and one of these threads,
// instead of a FUSE thread forever.
//
// A call that outlives its caller finishes on its own: whatever it holds
// (a descriptor, a buffer) must belong to it, not to the caller's stack;
// `Call::abandoned` tells it that nobody will take its result.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace clairfs::sys {

class BoundedCalls {
public:
    // `bound` 0: calls run on the caller's thread, unbounded. At most
    // `max_threads` calls run at once; more wait for a thread, and that
    // wait counts against the bound.
    BoundedCalls(std::chrono::milliseconds bound, unsigned max_threads);
    // Tells the threads to end and lets them go: idle ones end at once, and
    // one still inside a call finishes it first (the threads share the
    // queue's state, so none outlives what it touches).
    ~BoundedCalls();
    BoundedCalls(const BoundedCalls&) = delete;
    BoundedCalls& operator=(const BoundedCalls&) = delete;

    // Runs `call` and waits for it at most the bound: true if it finished
    // in time. False: it is still running or queued, and will run
    // `abandoned` (on its thread, once done) so it can release what it holds.
    // Both run with no lock held.
    struct Call {
        std::function<void()> run;
        std::function<void()> abandoned;
    };
    bool run(Call call);

    uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }

    struct Shared; // the queue and threads' state; outlives the pool while a call runs

private:
    std::chrono::milliseconds bound_;
    std::shared_ptr<Shared> shared_;
    std::atomic<uint64_t> timeouts_{0};
};

} // namespace clairfs::sys
