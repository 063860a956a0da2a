// SPDX-License-Identifier: MIT
#include "clairfs/fuse/notifier.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <pthread.h>

namespace clairfs::fuse {

void Notifier::post(std::function<void()> drop) {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    if (queue_.size() >= max_queued) {
        ++dropped_;
        return;
    }
    queue_.push_back(std::move(drop));
    if (!thread_.joinable()) {
        thread_ = sys::normal_thread([this] { run(); });
        pthread_setname_np(thread_.native_handle(), "clairfs-notify");
    }
    cv_.notify_one();
}

void Notifier::run() {
    std::unique_lock lk(mu_);
    for (;;) {
        cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        auto drop = std::move(queue_.front());
        queue_.pop_front();
        lk.unlock();
        drop();
        lk.lock();
    }
}

void Notifier::stop() {
    std::thread t;
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
        queue_.clear();
        t = std::move(thread_);
    }
    cv_.notify_all();
    if (t.joinable()) t.join();
}

uint64_t Notifier::dropped() const {
    std::lock_guard lk(mu_);
    return dropped_;
}

} // namespace clairfs::fuse
