// SPDX-License-Identifier: MIT
// The FUSE threads that may push into the kernel's page cache at once. A
// push waits for any page of its file that a READ in flight has locked, and
// that READ for a FUSE thread to answer it: so pushes never take more than
// half the threads, and a push that would is not made. Shared by the pushes
// at an open (PageCache::push_on_open) and a ranges job's pushes at a READ
// (RangeJobs::push_rest).
#pragma once

#include <algorithm>
#include <atomic>

namespace clairfs::prefetch {

class PushSlots {
public:
    explicit PushSlots(unsigned fuse_threads) : most_(std::max(1u, fuse_threads / 2)) {}
    // Whether a push may run now; if so, give() the slot back after it.
    bool take() {
        if (taken_.fetch_add(1, std::memory_order_relaxed) < most_) return true;
        taken_.fetch_sub(1, std::memory_order_relaxed);
        return false;
    }
    void give() { taken_.fetch_sub(1, std::memory_order_relaxed); }

private:
    const unsigned most_;
    std::atomic<unsigned> taken_{0};
};

} // namespace clairfs::prefetch
