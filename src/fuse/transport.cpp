// SPDX-License-Identifier: MIT
#include "clairfs/fuse/transport.hpp"
#include "clairfs/log.hpp"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <sched.h>

namespace clairfs::fuse {
namespace {

// Why io_uring cannot be asked for, or "" if it can: the build, then the
// kernel (whose switch may read Y, N, 1 or 0).
std::string why_not_io_uring(const std::string& switch_file) {
#if CLAIRFS_HAVE_IO_URING
    std::ifstream in(switch_file);
    std::string value;
    if (!in) {
        return "the kernel lacks it (no " + switch_file +
               ": Linux 6.14 or later built with CONFIG_FUSE_IO_URING has it)";
    }
    in >> value;
    if (value == "Y" || value == "1") return "";
    return "the kernel's switch is off (" + switch_file + " is " +
           (value.empty() ? std::string("empty") : value) +
           "; an administrator turns it on with fuse.enable_uring=1 at boot, or by writing Y "
           "there)";
#else
    (void)switch_file;
    return "this build's libfuse (" + std::to_string(FUSE_MAJOR_VERSION) + "." +
           std::to_string(FUSE_MINOR_VERSION) +
           ") lacks it (3.18 built with liburing has it: scripts/install-deps.sh fetches it "
           "into subprojects/libfuse)";
#endif
}

} // namespace

// Why SCHED_IDLE. A ring thread answers its CPU's requests on that CPU,
// then wakes the reader that asked. The scheduler places a woken thread
// on its last CPU only if that CPU is idle; the ring thread is still
// running there, so the reader goes to the other CPU, whose wake from
// idle is a round trip through the hypervisor on a VM, and the reader's
// next OPEN then lands on that CPU's ring. Every cached file paid that
// migration twice (perf: 29,782 migrations for 30,000 files). A CPU that
// runs only SCHED_IDLE threads counts as idle, and a normal thread woken
// there preempts them at once: the reader stays where it was, the ring
// thread finishes its turn when the reader sleeps again. Measured on this
// project's 2-CPU VM (bench/file_cost.py, 5,000 cached files of 110 KB):
// 67 us a file with the normal policy, 35 us with SCHED_IDLE, native 22.
// A thread a ring thread starts would inherit SCHED_IDLE: the daemon's
// threads start through sys::normal_thread, which avoids that.
//
// The cost: a SCHED_IDLE thread yields to every normal one. With six busy
// loops of nice -10 on both CPUs the ring threads still answered (totals
// within 4% of the normal policy's; p99 20 against 16 ms): the reader
// blocks on the ring thread, so the CPU it leaves goes to it soon enough.
// --ring-sched normal keeps the old policy for whoever sees otherwise.
int take_sched_idle() {
    sched_param none{};
    return pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
}

void Transport::first_ring_request() {
    on_ring_thread_ = true;
    if (ring_sched_ == config::RingSched::normal) return;
    if (int err = take_sched_idle(); err != 0) {
        // Once per mount: each ring thread would say the same.
        if (ring_threads_refused_.fetch_add(1, std::memory_order_relaxed) == 0)
            LOG_WARN("a ring thread could not take SCHED_IDLE (%s): the ring threads keep the "
                     "normal policy (--ring-sched normal says so without trying)",
                     std::strerror(err));
        return;
    }
    ring_threads_idle_.fetch_add(1, std::memory_order_relaxed);
}

std::string Transport::choose(config::IoUring mode, const std::string& switch_file) {
    mode_ = mode;
    asked_ = false;
    if (mode == config::IoUring::off) {
        settle(false, "--io-uring off");
        return "";
    }
    if (auto why = why_not_io_uring(switch_file); !why.empty()) {
        settle(false, why);
        if (mode == config::IoUring::on) return "--io-uring on, but io_uring cannot be used: " + why;
        return "";
    }
    asked_ = true;
    // Until the kernel's INIT says: the switch may change meanwhile.
    settle(false, "asked for; the kernel's INIT has not come yet");
    return "";
}

std::string Transport::init(fuse_conn_info* conn) {
    if (!asked_) return "";
#if CLAIRFS_HAVE_IO_URING
    // The kernel offers it only while its switch is on.
    if (conn->capable & FUSE_CAP_OVER_IO_URING) {
        conn->want |= FUSE_CAP_OVER_IO_URING;
        settle(true, std::string("--io-uring ") + config::io_uring_name(mode_) +
                         ", and the kernel's switch is on");
        return "";
    }
#else
    (void)conn;
#endif
    std::string why = "the kernel did not offer it at INIT (its switch turned off since?)";
    settle(false, why);
    if (mode_ == config::IoUring::on) return "--io-uring on, but io_uring cannot be used: " + why;
    return "";
}

bool Transport::ring_failed(const std::string& why) {
    if (!on()) return false;
    settle(false, "libfuse could not set its rings up (" + why + ")");
    if (mode_ == config::IoUring::on) {
        LOG_ERROR("--io-uring on, but libfuse could not set its rings up (%s): ending the mount",
                  why.c_str());
        return true;
    }
    LOG_WARN("io_uring off: libfuse could not set its rings up (%s); serving /dev/fuse",
             why.c_str());
    return false;
}

bool Transport::on() const {
    std::lock_guard lk(mu_);
    return ring_;
}

void Transport::settle(bool ring, std::string why) {
    std::lock_guard lk(mu_);
    ring_ = ring;
    why_ = std::move(why);
}

void Transport::status(nlohmann::json& out) const {
    std::lock_guard lk(mu_);
    out = {{"in_use", ring_ ? "io_uring" : "/dev/fuse"},
           {"io_uring", config::io_uring_name(mode_)},
           {"reason", why_},
           {"requests_io_uring", ring_requests_.load(std::memory_order_relaxed)},
           {"requests_dev_fuse", device_requests_.load(std::memory_order_relaxed)},
           {"ring_sched", config::ring_sched_name(ring_sched_)},
           {"ring_threads_idle", ring_threads_idle_.load(std::memory_order_relaxed)},
           {"ring_threads_refused", ring_threads_refused_.load(std::memory_order_relaxed)}};
}

} // namespace clairfs::fuse
