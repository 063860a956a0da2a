// SPDX-License-Identifier: MIT
#include "clairfs/fuse/session.hpp"

#include "clairfs/fuse/daemon.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace clairfs::fuse {
namespace {

// fuse_opt splits -o values at commas; a backslash protects them.
std::string escape_option(const std::string& value) {
    std::string out;
    for (char c : value) {
        if (c == ',' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

std::string mount_options(const Filesystem& fs) {
    const auto& o = fs.options;
    // Not "ro": writes to .clairfs/control must reach the daemon, whose
    // handlers refuse every other change with EROFS. default_permissions:
    // the kernel checks the modes we report, since the daemon may run as
    // root; the control file is then writable by its owner only.
    std::string opts =
        "default_permissions,subtype=clairfs,fsname=" + escape_option("clairfs:" + o.backing) +
        ",max_read=" + std::to_string(o.max_read);
    if (o.allow_other) opts += ",allow_other";
    // Not a kernel mount option: libfuse's session takes it (and sets its
    // rings up at INIT if the kernel offers them).
    if (fs.transport.asked()) opts += ",io_uring";
    return opts;
}

struct SessionDeleter {
    void operator()(fuse_session* se) const { fuse_session_destroy(se); }
};
struct LoopConfigDeleter {
    void operator()(fuse_loop_config* c) const { fuse_loop_cfg_destroy(c); }
};

int run_loop(fuse_session* se, const config::MountOptions& o) {
    std::unique_ptr<fuse_loop_config, LoopConfigDeleter> cfg(fuse_loop_cfg_create());
    fuse_loop_cfg_set_max_threads(cfg.get(), o.threads);
    // Idle workers are kept (libfuse's default): capping them made libfuse
    // create and destroy a thread for nearly every request at low counts.
    // One /dev/fuse descriptor per worker avoids every thread contending
    // for the same device read queue.
    fuse_loop_cfg_set_clone_fd(cfg.get(), 1);
    return fuse_session_loop_mt(se, cfg.get());
}

// The mount being served, for libfuse's log callback, which has no user
// data: one mount per process.
Filesystem* serving = nullptr;

// libfuse tells of rings it could not set up only in its log, after our
// init callback has seen the kernel offer them: "fuse: failed to start
// io-uring: REASON", and then it serves /dev/fuse.
void watch_for_ring_failure(const char* msg) {
    static constexpr std::string_view failed = "failed to start io-uring: ";
    std::string_view m(msg);
    auto at = m.find(failed);
    if (at == std::string_view::npos || !serving) return;
    if (serving->transport.ring_failed(std::string(m.substr(at + failed.size()))) &&
        serving->session)
        fuse_session_exit(serving->session);
}

// libfuse's own messages (and libfuse -d traces) join our log, so they
// reach syslog once the daemon has no terminal.
void libfuse_log(enum fuse_log_level level, const char* fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t len = strlen(msg);
    while (len && msg[len - 1] == '\n') msg[--len] = '\0';
    watch_for_ring_failure(msg);
    auto lvl = level <= FUSE_LOG_ERR       ? log::Level::error
               : level <= FUSE_LOG_WARNING ? log::Level::warn
               : level <= FUSE_LOG_INFO    ? log::Level::info
                                           : log::Level::debug;
    if (lvl == log::Level::debug && log::level() < log::Level::debug) lvl = log::Level::info;
    log::write(lvl, "%s", msg);
}

// A session mounted on the mount point, with libfuse's signal handlers;
// "" or why not.
std::string mount_session(Filesystem& fs, std::unique_ptr<fuse_session, SessionDeleter>& se) {
    const auto& o = fs.options;
    std::string opts = mount_options(fs);
    std::vector<const char*> argv = {"clairfs", "-o", opts.c_str()};
    if (o.fuse_debug) argv.push_back("-d");
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    se.reset(fuse_session_new(&args, &operations(), sizeof(fuse_lowlevel_ops), &fs));
    if (!se) return "cannot create the FUSE session (see the libfuse message above)";
    fs.session = se.get();
    if (fuse_set_signal_handlers(se.get()) != 0) return "cannot install signal handlers";
    if (fuse_session_mount(se.get(), o.mountpoint.c_str()) != 0) {
        fuse_remove_signal_handlers(se.get());
        return "mount on '" + o.mountpoint + "' failed (see the libfuse message above)";
    }
    LOG_INFO("mounted %s on %s", o.backing.c_str(), o.mountpoint.c_str());
    // Before the first request is served: the reads of a job already
    // waiting for the mount are then read ahead in --max-read requests.
    fs.readahead.set(o.mountpoint, o.max_read);
    return "";
}

// Into the background unless told otherwise: the parent only reports
// whether the child became ready, and exits. "" or why not.
std::string leave_terminal(Filesystem& fs, fuse_session* se) {
    const auto& o = fs.options;
    if (o.foreground || fs.predetached) {
        if (!o.log_file.empty() && log::redirect(o.log_file) < 0)
            LOG_WARN("cannot open log file %s, logging to stderr", o.log_file.c_str());
        return "";
    }
    Detached d;
    if (auto why = detach(d); !why.empty()) {
        fuse_session_unmount(se);
        return why;
    }
    if (d.is_parent) {
        // The child owns the mount now; the parent only reports.
        std::string why = wait_ready(d.ready_fd, o.mountpoint);
        if (!why.empty()) LOG_ERROR("%s", why.c_str());
        _exit(why.empty() ? 0 : 1);
    }
    fs.ready_fd = d.ready_fd;
    return "";
}

// Its threads may be writing to the session (page-cache pushes): they end
// before the session does. A fetch hung in the backing store is waited for
// within --io-timeout, then left behind: the process exits around it, so
// the unmount and a `clairfs umount` waiting for the daemon both finish.
void stop_serving(Filesystem& fs, fuse_session* se) {
    // At most 10 s: `clairfs umount` waits 30 s for the daemon, and what a
    // late fetch or SSD write would bring is only cache warmth (the SSD
    // journal is built to survive being cut short).
    using std::chrono::milliseconds;
    auto bound = fs.engine->io_timeout();
    if (bound.count() > 0) bound = std::clamp(bound, milliseconds(1000), milliseconds(10000));
    if (fs.on_stop) fs.on_stop();
    // Before the engine: the watcher tells it of opens.
    if (fs.open_watch) fs.open_watch->stop();
    if (fs.control) fs.control->stop_detection();
    bool clean_stop = fs.engine->stop_within(bound);
    fs.notifier.stop(); // after the engine, which may still post drops
    fs.session = nullptr;
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    if (!clean_stop) {
        fs.engine->release_for_exit();
        LOG_WARN("unmounted %s with reads still hung in the backing store; exiting around them",
                 fs.options.mountpoint.c_str());
        _exit(0);
    }
}

void log_unmounted(const Filesystem& fs) {
    cache::BackingStats b = fs.engine->backing().stats();
    LOG_INFO("unmounted %s (%llu opens, %llu reads, %llu bytes; backing store: %llu reads, "
             "%llu bytes, %llu errors)",
             fs.options.mountpoint.c_str(),
             static_cast<unsigned long long>(fs.counters.opens.load()),
             static_cast<unsigned long long>(fs.counters.reads.load()),
             static_cast<unsigned long long>(fs.counters.read_bytes.load()),
             static_cast<unsigned long long>(b.reads), static_cast<unsigned long long>(b.bytes),
             static_cast<unsigned long long>(b.errors));
}

} // namespace

std::string serve(Filesystem& fs) {
    const auto& o = fs.options;
    fs.transport.ring_sched(o.fast_path.ring_sched);
    if (auto why = fs.transport.choose(o.fast_path.io_uring); !why.empty()) return why;
    serving = &fs;
    struct Unset {
        ~Unset() { serving = nullptr; }
    } unset;
    fuse_set_log_func(libfuse_log);
    std::unique_ptr<fuse_session, SessionDeleter> se;
    if (auto why = mount_session(fs, se); !why.empty()) return why;
    if (auto why = leave_terminal(fs, se.get()); !why.empty()) return why;
    // In the process that serves, before a ring thread takes SCHED_IDLE:
    // threads first needed inside a request start at the normal policy.
    sys::start_thread_starter();
    int rv = run_loop(se.get(), o);
    stop_serving(fs, se.get());
    log_unmounted(fs);
    // A signal ends the loop with its number: that is the clean way out.
    bool clean = rv == 0 || rv == SIGINT || rv == SIGTERM || rv == SIGHUP;
    return clean ? "" : "FUSE session ended with an error";
}

} // namespace clairfs::fuse
