// SPDX-License-Identifier: MIT
// Page-cache drops (FUSE_NOTIFY_INVAL_INODE) asked for while answering a
// request that came over io_uring. Such a drop waits for every page of the
// file that a READ in flight has locked, and that READ may be queued on
// the same CPU's ring, whose one libfuse thread is the one waiting: made
// there, the drop would wait for itself (and the whole ring with it). So
// they are made here, in order, on one thread of their own. Over /dev/fuse
// another reader thread answers the READ, and drops are made in place.
// Pushes (FUSE_NOTIFY_STORE) wait the same way and are refused on a ring
// thread instead (fuse_init.cpp): a late push is a copy nobody may need.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace clairfs::fuse {

class Notifier {
public:
    Notifier() = default;
    Notifier(const Notifier&) = delete;
    Notifier& operator=(const Notifier&) = delete;
    ~Notifier() { stop(); }
    // Runs `drop` on the notifier's thread, started at the first post;
    // beyond `max_queued` waiting, it is not run (the pages then stay
    // until the kernel reclaims them).
    void post(std::function<void()> drop);
    // What is queued is not run; joins the thread. Before the session goes.
    void stop();
    uint64_t dropped() const;

private:
    static constexpr size_t max_queued = 4096;
    void run();
    mutable std::mutex mu_; // leaf; guards everything below
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    uint64_t dropped_ = 0;
    std::thread thread_;
};

} // namespace clairfs::fuse
