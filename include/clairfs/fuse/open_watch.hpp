// SPDX-License-Identifier: MIT
// --opens fanotify: the kernel opens and closes the mount's files itself
// (FUSE no_open), and clairfs learns of each open and close from fanotify
// instead, after the fact and in batches. An OPEN round trip costs the
// job's open a wake-up of a daemon thread and back (14-22 us on the VMs
// this was measured on, more than a local open and read of a 110 KB
// file), and its RELEASE another wake-up of the daemon: two of the
// daemon's context switches per file. A fanotify event costs the opener a
// small allocation and the daemon a few microseconds, read dozens at a
// time (bench/RESULTS.md, "Opens from fanotify").
//
// It needs CAP_SYS_ADMIN (fanotify_init). The mark covers the whole
// mounted file system, so opens through a bind mount of the mount count
// too. Until the mark is in place the daemon answers OPENs as before; the
// first OPEN after it is answered ENOSYS, which tells the kernel to stop
// sending OPEN and RELEASE for good (FUSE_CAP_NO_OPEN_SUPPORT).
//
// The events are facts after the fact: the job's reads never wait on the
// daemon for an open, so the files due next must already be in the
// kernel's page cache (the engine pushes them ahead, prefetch/scheduler.cpp),
// and a file whose pages are not there is read through READs as ever.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <vector>

namespace clairfs::fuse {

struct Filesystem;

class OpenWatch {
public:
    OpenWatch() = default;
    ~OpenWatch();
    OpenWatch(const OpenWatch&) = delete;
    OpenWatch& operator=(const OpenWatch&) = delete;

    // Before the mount, in the process that will serve: the fanotify
    // group. "" or why there can be none (EPERM without CAP_SYS_ADMIN,
    // ENOSYS on a kernel without fanotify).
    std::string prepare();
    // From FUSE init: a thread marks the mount (which needs the INIT reply
    // the caller has not sent yet) and then follows its opens.
    void start(Filesystem& fs);
    // Joins the thread; idempotent.
    void stop();
    // Marked: opens may be left to the kernel from now on.
    bool watching() const { return watching_.load(std::memory_order_acquire); }
    // A write to a dataset file was refused (fuse_write.cpp): with no OPEN
    // to refuse the writable open, the writer's bytes may sit in the
    // file's cached pages (a write() copies them there before its WRITE,
    // a shared writable mapping's stores stay there after its writeback
    // fails), where other readers would see them. The watcher drops the
    // file's pages, from its own thread: the drop may write dirty pages
    // back first, each a WRITE that a FUSE thread must answer.
    void refused_write(uint64_t ino);
    // status key "opens".
    void status(nlohmann::json& out) const;

private:
    void run(Filesystem& fs);
    bool mark(const std::string& mountpoint);
    void read_events(Filesystem& fs, std::vector<char>& buf);
    void handle(Filesystem& fs, const char* buf, size_t len);
    void handle_event(Filesystem& fs, uint64_t mask, int fd, int32_t pid, int32_t self);
    void drop_written(Filesystem& fs);
    void drop_due(Filesystem& fs, bool all);

    // Closed files whose pages go soon (drop_due), with a descriptor of
    // each: the watcher's thread only.
    struct Due {
        int fd;
        std::chrono::steady_clock::time_point closed;
    };
    std::deque<Due> due_;
    int fan_fd_ = -1;
    int stop_fd_ = -1; // eventfd: stop() wakes the thread's poll
    std::thread thread_;
    std::atomic<bool> watching_{false};
    mutable std::mutex mu_; // leaf; guards why_off_
    std::string why_off_;   // why opens are not watched, once known
    std::vector<uint64_t> written_; // refused_write(), for the thread; under mu_
    std::atomic<uint64_t> opens_{0}, closes_{0}, batches_{0}, overflows_{0}, foreign_{0},
        errors_{0}, write_drops_{0};
};

} // namespace clairfs::fuse
