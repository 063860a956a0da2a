// SPDX-License-Identifier: MIT
#include "clairfs/fuse/open_watch.hpp"
#include "clairfs/fuse/filesystem.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace clairfs::fuse {
namespace {

// After each batch the thread sleeps this long before it reads again, so
// the events of several files come in one wake-up rather than one each: a
// few milliseconds are nothing against a prefetch lead of hundreds of
// files, and the kernel merges a file's open and close into one event
// while neither is read.
constexpr auto batch_gap = std::chrono::milliseconds(4);
// How long a file's pages stay after its last close before they are
// dropped (OpenWatch::drop_due), and how many files may wait for it.
constexpr auto drop_delay = std::chrono::milliseconds(8);
constexpr size_t max_due = 256;

std::string errno_text(int e) {
    return std::strerror(e);
}

// The dataset file `fd` is: its inode number is the node's
// (attributes.cpp), read without a GETATTR, which the attributes' expiry
// would otherwise send. False for any other file.
bool dataset_file(const Filesystem& fs, int fd, index::NodeId& id, uint64_t& ino) {
    struct statx sx {};
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_INO | STATX_TYPE, &sx) != 0 ||
        !S_ISREG(sx.stx_mode) || sx.stx_ino == 0 ||
        !fs.index.contains(static_cast<index::NodeId>(sx.stx_ino - 1)))
        return false;
    id = static_cast<index::NodeId>(sx.stx_ino - 1);
    ino = sx.stx_ino;
    return S_ISREG(fs.index.node(id).mode);
}

} // namespace

OpenWatch::~OpenWatch() {
    stop();
    if (fan_fd_ >= 0) ::close(fan_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
}

std::string OpenWatch::prepare() {
    // Notification only: the opener never waits for the daemon. The
    // descriptors events carry are read-only, and close-on-exec.
    fan_fd_ = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK,
                            O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    if (fan_fd_ < 0) {
        int e = errno;
        std::string why = e == EPERM ? "fanotify needs CAP_SYS_ADMIN (mount as root)"
                                     : "fanotify_init failed: " + errno_text(e);
        std::lock_guard lk(mu_);
        why_off_ = why;
        return why;
    }
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) {
        std::string why = "eventfd failed: " + errno_text(errno);
        ::close(fan_fd_);
        fan_fd_ = -1;
        std::lock_guard lk(mu_);
        why_off_ = why;
        return why;
    }
    return "";
}

void OpenWatch::start(Filesystem& fs) {
    if (fan_fd_ < 0 || thread_.joinable()) return;
    thread_ = sys::normal_thread([this, &fs] { run(fs); });
}

void OpenWatch::stop() {
    if (!thread_.joinable()) return;
    uint64_t one = 1;
    if (::write(stop_fd_, &one, sizeof one) < 0) LOG_WARN("open watch: cannot wake its thread");
    thread_.join();
}

// The whole file system the mount point shows, not just this mount: a bind
// mount of it (a container's) opens the same files.
bool OpenWatch::mark(const std::string& mountpoint) {
    if (fanotify_mark(fan_fd_, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
                      FAN_OPEN | FAN_CLOSE_NOWRITE | FAN_CLOSE_WRITE,
                      AT_FDCWD, mountpoint.c_str()) == 0)
        return true;
    std::string why = "cannot watch " + mountpoint + " with fanotify: " + errno_text(errno);
    LOG_WARN("%s; every open is an OPEN round trip to the daemon", why.c_str());
    std::lock_guard lk(mu_);
    why_off_ = why;
    return false;
}

void OpenWatch::run(Filesystem& fs) {
    // Blocks until the kernel has the INIT reply, which our caller sends.
    if (!mark(fs.options.mountpoint)) return;
    watching_.store(true, std::memory_order_release);
    // The switch, made here rather than at the job's first open: this
    // OPEN is answered ENOSYS, after which the kernel sends none. Until
    // then each open would be told twice, once by OPEN and once by the
    // event, whose descriptor the kernel opens with an OPEN of its own.
    const std::string status = fs.options.mountpoint + "/.clairfs/status";
    if (int fd = ::open(status.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0)
        ::close(fd);
    else
        LOG_WARN("open watch: cannot open %s: %s", status.c_str(), errno_text(errno).c_str());
    LOG_INFO("opens of %s are followed through fanotify", fs.options.mountpoint.c_str());
    std::vector<char> buf(64 << 10);
    pollfd fds[2] = {{fan_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    for (;;) {
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            LOG_ERROR("open watch: poll failed: %s; opens are no longer followed",
                      errno_text(errno).c_str());
            return drop_due(fs, true);
        }
        if (fds[1].revents) return drop_due(fs, true);
        read_events(fs, buf);
        drop_written(fs);
        drop_due(fs, false);
        // Out of the batch, not out of the loop: stop() still wakes poll.
        pollfd stop_only{stop_fd_, POLLIN, 0};
        if (::poll(&stop_only, 1, static_cast<int>(batch_gap.count())) > 0)
            return drop_due(fs, true);
    }
}

// Everything queued, a buffer at a time.
void OpenWatch::read_events(Filesystem& fs, std::vector<char>& buf) {
    for (;;) {
        ssize_t n = ::read(fan_fd_, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) errors_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        if (n == 0) return;
        batches_.fetch_add(1, std::memory_order_relaxed);
        handle(fs, buf.data(), static_cast<size_t>(n));
        if (static_cast<size_t>(n) < buf.size() / 2) return;
    }
}

void OpenWatch::handle(Filesystem& fs, const char* buf, size_t len) {
    const auto self = static_cast<int32_t>(::getpid());
    const char* p = buf;
    size_t left = len;
    while (left >= sizeof(fanotify_event_metadata)) {
        fanotify_event_metadata m;
        std::memcpy(&m, p, sizeof m);
        if (m.event_len < sizeof m || m.event_len > left) break;
        p += m.event_len;
        left -= m.event_len;
        if (m.mask & FAN_Q_OVERFLOW) {
            // Opens were lost: the trackers see a gap, as after any open
            // they could not place, and find the job again from the next.
            if (overflows_.fetch_add(1, std::memory_order_relaxed) == 0)
                LOG_WARN("open watch: the kernel's event queue overflowed; some opens were not seen");
            continue;
        }
        if (m.fd >= 0) handle_event(fs, m.mask, m.fd, m.pid, self);
    }
}

// One file's event; its descriptor `fd` is kept for a later drop, or closed.
void OpenWatch::handle_event(Filesystem& fs, uint64_t mask, int fd, int32_t pid, int32_t self) {
    index::NodeId id = 0;
    uint64_t ino = 0;
    if (pid == self || !dataset_file(fs, fd, id, ino)) {
        // The control files, or the daemon's own.
        foreign_.fetch_add(1, std::memory_order_relaxed);
        ::close(fd);
        return;
    }
    // A merged event holds an open and the close after it.
    if (mask & FAN_OPEN) {
        opens_.fetch_add(1, std::memory_order_relaxed);
        fs.counters.opens.fetch_add(1, std::memory_order_relaxed);
        fs.engine->watched_open(id, static_cast<uint32_t>(pid));
    }
    if (mask & FAN_CLOSE_WRITE) {
        // The last close of a writable open: whatever it stored in the
        // cached pages goes with them (see refused_write()).
        refused_write(ino);
    }
    if (mask & (FAN_CLOSE_NOWRITE | FAN_CLOSE_WRITE)) {
        closes_.fetch_add(1, std::memory_order_relaxed);
        // Dropped through this descriptor, a little later (drop_due()).
        if (fs.engine->watched_close(id)) {
            due_.push_back({fd, std::chrono::steady_clock::now()});
            return; // the descriptor stays open until then
        }
    }
    ::close(fd);
}

// A file's pages leave the page cache through a descriptor of it, with
// posix_fadvise(DONTNEED): unlike FUSE_NOTIFY_INVAL_INODE it leaves the
// attributes valid, so the next fstat makes no GETATTR. Not at once: the
// job has just read the pages, and pages it read are still held in its
// CPU's LRU batches for a while, which fadvise can only free by draining
// every CPU's batches, a round of cross-CPU work per file. A few
// milliseconds later other pages have pushed them out.
void OpenWatch::drop_due(Filesystem& fs, bool all) {
    const auto now = std::chrono::steady_clock::now();
    while (!due_.empty() &&
           (all || due_.size() > max_due || now - due_.front().closed >= drop_delay)) {
        int fd = due_.front().fd;
        due_.pop_front();
        fs.engine->close_dropped(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
        ::close(fd);
    }
}

void OpenWatch::refused_write(uint64_t ino) {
    std::lock_guard lk(mu_);
    // A writer makes a WRITE per page or so: one drop per file will do.
    if (written_.size() < 4096 &&
        std::find(written_.begin(), written_.end(), ino) == written_.end())
        written_.push_back(ino);
}

void OpenWatch::drop_written(Filesystem& fs) {
    std::vector<uint64_t> due;
    {
        std::lock_guard lk(mu_);
        due.swap(written_);
    }
    for (uint64_t ino : due) {
        if (fs.session) fuse_lowlevel_notify_inval_inode(fs.session, ino, 0, 0);
        write_drops_.fetch_add(1, std::memory_order_relaxed);
    }
}

void OpenWatch::status(nlohmann::json& out) const {
    std::string why;
    {
        std::lock_guard lk(mu_);
        why = why_off_;
    }
    out = {{"source", watching() ? "fanotify" : "fuse"},
           {"opens", opens_.load(std::memory_order_relaxed)},
           {"closes", closes_.load(std::memory_order_relaxed)},
           {"batches", batches_.load(std::memory_order_relaxed)},
           {"overflows", overflows_.load(std::memory_order_relaxed)},
           {"other", foreign_.load(std::memory_order_relaxed)},
           {"errors", errors_.load(std::memory_order_relaxed)},
           {"write_drops", write_drops_.load(std::memory_order_relaxed)}};
    if (!why.empty()) out["why_not"] = why;
}

} // namespace clairfs::fuse
