// SPDX-License-Identifier: MIT
// Which channel carries the kernel's requests to the mount (--io-uring):
// FUSE over io_uring or /dev/fuse. Over io_uring a request is answered on
// the CPU that made it, with no wake-up of a reader thread on another CPU,
// which is most of what a warm OPEN costs over /dev/fuse. It needs libfuse
// 3.18 built with liburing, a kernel built with CONFIG_FUSE_IO_URING, and
// that kernel's switch on (/sys/module/fuse/parameters/enable_uring = Y),
// which clairfs never flips: an administrator does (fuse.enable_uring=1
// at boot, or writing Y there).
//
// libfuse runs one ring thread per CPU, each answering its CPU's requests
// in turn, where /dev/fuse has --threads readers: a READ that waits on the
// backing store holds up the other requests of its CPU meanwhile.
//
// Each ring thread, at its first request, takes the --ring-sched policy
// (SCHED_IDLE by default; transport.cpp says why).
#pragma once

#include "clairfs/config/mount_options.hpp"

#include <atomic>
#include <cstdint>
#include <fuse_lowlevel.h>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace clairfs::fuse {

inline constexpr const char* enable_uring_switch = "/sys/module/fuse/parameters/enable_uring";

// Gives the calling thread SCHED_IDLE: 0 or an errno.
int take_sched_idle();

class Transport {
public:
    // Before the mount: whether to ask libfuse for io_uring. "" unless
    // --io-uring on cannot be had, then the reason, in one line.
    // `switch_file` is the kernel's switch (a test names another file).
    std::string choose(config::IoUring mode, const std::string& switch_file = enable_uring_switch);
    // Before the mount: the policy ring threads take (--ring-sched).
    void ring_sched(config::RingSched policy) { ring_sched_ = policy; }
    // libfuse is to be given -o io_uring.
    bool asked() const { return asked_; }
    // From FUSE init, before libfuse sets its rings up: takes the kernel's
    // offer. "" or, with --io-uring on, why the mount cannot serve.
    std::string init(fuse_conn_info* conn);
    // libfuse could not set its rings up, and serves /dev/fuse instead;
    // true if the mount must end (--io-uring on).
    bool ring_failed(const std::string& why);
    // Each request, by the way it came.
    void count(fuse_req_t req) {
#if CLAIRFS_HAVE_IO_URING
        if (fuse_req_is_uring(req)) {
            if (!on_ring_thread_) first_ring_request(); // a ring thread serves its ring alone
            ring_requests_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        device_requests_.fetch_add(1, std::memory_order_relaxed);
#else
        (void)req;
        device_requests_.fetch_add(1, std::memory_order_relaxed);
#endif
    }
    bool on() const;
    void status(nlohmann::json& out) const;
    // The calling thread is one of libfuse's ring threads, the only one
    // answering its CPU's requests: nothing there may wait for a READ.
    static bool on_ring_thread() { return on_ring_thread_; }

private:
    void settle(bool ring, std::string why);
    void first_ring_request();
    static inline thread_local bool on_ring_thread_ = false;
    config::IoUring mode_ = config::IoUring::auto_;
    config::RingSched ring_sched_ = config::RingSched::idle;
    bool asked_ = false; // set before the session exists, read-only after
    std::atomic<uint64_t> ring_requests_{0}, device_requests_{0};
    // Ring threads that took SCHED_IDLE, and that could not (they keep
    // the normal policy: slower, never wrong).
    std::atomic<uint32_t> ring_threads_idle_{0}, ring_threads_refused_{0};
    mutable std::mutex mu_; // leaf; guards the two fields below
    bool ring_ = false;
    std::string why_ = "not mounted yet";
};

} // namespace clairfs::fuse
