// SPDX-License-Identifier: MIT
#include "clairfs/sys/normal_thread.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <pthread.h>
#include <sched.h>

namespace clairfs::sys {
namespace {

struct Request {
    std::function<void()> body;
    std::promise<std::thread> started;
};

// One per process, never destroyed: a thread may be handed a start while
// the process exits, and a starter torn down by static destruction under
// it would hang or crash that exit. Leaked on purpose.
class Starter {
public:
    void start() {
        std::lock_guard lk(mu_);
        if (running_) return;
        std::thread t([this] { run(); });
        pthread_setname_np(t.native_handle(), "clairfs-starter");
        t.detach();
        running_ = true;
    }

    bool running() {
        std::lock_guard lk(mu_);
        return running_;
    }

    std::thread start_for(std::function<void()> body) {
        Request r{std::move(body), {}};
        std::future<std::thread> started = r.started.get_future();
        {
            std::lock_guard lk(mu_);
            queue_.push_back(&r);
        }
        cv_.notify_one();
        return started.get(); // rethrows the constructor's exception
    }

private:
    void run() {
        std::unique_lock lk(mu_);
        for (;;) {
            cv_.wait(lk, [this] { return !queue_.empty(); });
            Request* r = queue_.front();
            queue_.pop_front();
            lk.unlock();
            try {
                r->started.set_value(std::thread(std::move(r->body)));
            } catch (...) {
                r->started.set_exception(std::current_exception());
            }
            lk.lock();
        }
    }

    std::mutex mu_; // leaf; guards the two fields below
    bool running_ = false;
    std::deque<Request*> queue_; // each waited for by its caller
    std::condition_variable cv_;
};

Starter& starter() {
    static Starter* s = new Starter;
    return *s;
}

} // namespace

void start_thread_starter() {
    starter().start();
}

std::thread normal_thread(std::function<void()> body) {
    if (sched_getscheduler(0) == SCHED_IDLE && starter().running())
        return starter().start_for(std::move(body));
    return std::thread(std::move(body));
}

} // namespace clairfs::sys
