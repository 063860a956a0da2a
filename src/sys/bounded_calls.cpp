// SPDX-License-Identifier: MIT
#include "clairfs/sys/bounded_calls.hpp"

#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <pthread.h>
#include <thread>
#include <vector>

namespace clairfs::sys {

// One queued or running call and whether its caller still waits.
struct Ticket {
    BoundedCalls::Call call;
    bool done = false;      // guarded by Shared::mu
    bool abandoned = false; // likewise: the caller gave up waiting
    std::condition_variable cv;
};

// Lock order: mu is a leaf; never held across a call.
struct BoundedCalls::Shared {
    std::mutex mu;
    std::condition_variable work_cv;
    std::deque<std::shared_ptr<Ticket>> queue;
    unsigned threads = 0, idle = 0, max_threads = 1;
    bool stopping = false;
    std::vector<std::thread> started;
};

namespace {

void serve(const std::shared_ptr<BoundedCalls::Shared>& s) {
    pthread_setname_np(pthread_self(), "clairfs-io");
    std::unique_lock lk(s->mu);
    for (;;) {
        ++s->idle;
        s->work_cv.wait(lk, [&] { return s->stopping || !s->queue.empty(); });
        --s->idle;
        if (s->queue.empty()) return;
        std::shared_ptr<Ticket> t = std::move(s->queue.front());
        s->queue.pop_front();
        lk.unlock();
        contained("a backing-store call", [&] { t->call.run(); });
        lk.lock();
        t->done = true;
        if (t->abandoned) {
            lk.unlock();
            contained("releasing an abandoned call", [&] { t->call.abandoned(); });
            lk.lock();
        }
        t->cv.notify_all();
    }
}

} // namespace

BoundedCalls::BoundedCalls(std::chrono::milliseconds bound, unsigned max_threads)
    : bound_(bound), shared_(std::make_shared<Shared>()) {
    shared_->max_threads = std::max(max_threads, 1u);
}

BoundedCalls::~BoundedCalls() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lk(shared_->mu);
        shared_->stopping = true;
        threads.swap(shared_->started);
    }
    shared_->work_cv.notify_all();
    // Each thread holds `shared_`, so one stuck in a call can be let go.
    for (auto& t : threads) t.detach();
}

bool BoundedCalls::run(Call call) {
    if (bound_.count() <= 0) {
        call.run();
        return true;
    }
    auto t = std::make_shared<Ticket>();
    t->call = std::move(call);
    std::unique_lock lk(shared_->mu);
    shared_->queue.push_back(t);
    // A thread per call in flight, up to the cap: threads stuck in a hung
    // read must not leave later calls of other files without one.
    if (shared_->idle < shared_->queue.size() && shared_->threads < shared_->max_threads) {
        try {
            shared_->started.push_back(normal_thread([s = shared_] { serve(s); }));
            ++shared_->threads;
        } catch (...) {
            // No thread to be had: the threads there are take it; with
            // none, the call must not stay queued past its caller.
            if (shared_->threads == 0) {
                shared_->queue.pop_back();
                throw;
            }
        }
    }
    shared_->work_cv.notify_one();
    if (t->cv.wait_for(lk, bound_, [&] { return t->done; })) return true;
    // Still queued: nobody will want it, so it never runs.
    for (auto it = shared_->queue.begin(); it != shared_->queue.end(); ++it) {
        if (*it == t) {
            shared_->queue.erase(it);
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
    }
    t->abandoned = true;
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    return false;
}

} // namespace clairfs::sys
