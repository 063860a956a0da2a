// SPDX-License-Identifier: MIT
#include "drop_behind.hpp"

#include "clairfs/sys/join_within.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <cerrno>
#include <pthread.h>

namespace clairfs::prefetch {

DropBehind::DropBehind(Dropper drop) : drop_(std::move(drop)) {}

DropBehind::~DropBehind() {
    stop();
}

void DropBehind::start() {
    if (thread_.joinable()) return;
    thread_ = sys::normal_thread([this] {
        pthread_setname_np(pthread_self(), "clairfs-dropbh");
        run();
    });
}

bool DropBehind::stop(std::chrono::milliseconds bound) {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    cv_.notify_one();
    return sys::join_within(thread_, exited_, bound);
}

void DropBehind::queue(index::NodeId id, uint64_t off, uint64_t size) {
    {
        std::lock_guard lk(mu_);
        if (stopping_ || queue_.size() >= max_queued) return;
        queue_.push_back({id, off, size});
    }
    cv_.notify_one();
}

void DropBehind::run() {
    std::vector<Range> batch;
    std::unique_lock lk(mu_);
    for (;;) {
        cv_.wait(lk, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) {
            exited_.store(true, std::memory_order_release);
            return;
        }
        batch.swap(queue_);
        lk.unlock();
        for (const Range& r : batch) {
            if (stopping_.load(std::memory_order_relaxed)) break; // the mount is going
            int rv = drop_(r.id, r.off, r.size);
            // ENOENT: the kernel has no inode for the file, so no pages.
            // Another error leaves the pages to the kernel's reclaim.
            if (rv == 0 || rv == -ENOENT) dropped_.fetch_add(1, std::memory_order_relaxed);
        }
        batch.clear();
        lk.lock();
    }
}

} // namespace clairfs::prefetch
