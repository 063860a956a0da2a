// SPDX-License-Identifier: MIT
#include "clairfs/log.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <syslog.h>
#include <unistd.h>

namespace clairfs::log {
namespace {

enum class Sink { stderr_stream, syslog, file };

// No lock: a line is formatted into a buffer of its own and goes out in
// one write(2) (one line per call, whole, even from many threads: O_APPEND
// for a file, and pipes and terminals take a line this short at once), or
// through syslog(3), which serialises itself. A thread logging never waits
// for another's I/O. redirect() publishes the fd before the sink that
// names it, and never closes the fd it replaces (stderr), so a writer that
// read the old sink still writes somewhere valid.
std::atomic<Level> g_level{Level::info};
std::atomic<Sink> g_sink{Sink::stderr_stream};
std::atomic<int> g_fd{STDERR_FILENO};

const char* prefix(Level level) {
    switch (level) {
    case Level::error:
        return "";
    case Level::warn:
        return "warning: ";
    case Level::info:
        return "";
    case Level::debug:
        return "debug: ";
    }
    return "";
}

int syslog_priority(Level level) {
    switch (level) {
    case Level::error:
        return LOG_ERR;
    case Level::warn:
        return LOG_WARNING;
    case Level::info:
        return LOG_INFO;
    case Level::debug:
        return LOG_DEBUG;
    }
    return LOG_INFO;
}

} // namespace

bool parse_level(std::string_view text, Level& out) {
    static constexpr std::pair<std::string_view, Level> names[] = {{"error", Level::error},
                                                                   {"warn", Level::warn},
                                                                   {"info", Level::info},
                                                                   {"debug", Level::debug}};
    for (auto& [name, lvl] : names) {
        if (name == text) {
            out = lvl;
            return true;
        }
    }
    return false;
}

void set_level(Level level) {
    g_level.store(level, std::memory_order_relaxed);
}
Level level() {
    return g_level.load(std::memory_order_relaxed);
}

int redirect(const std::string& file) {
    if (file.empty()) {
        openlog("clairfs", LOG_PID, LOG_DAEMON);
        g_sink.store(Sink::syslog, std::memory_order_release);
        return 0;
    }
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    g_fd.store(fd, std::memory_order_release);
    g_sink.store(Sink::file, std::memory_order_release);
    return 0;
}

void write(Level level, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    Sink sink = g_sink.load(std::memory_order_acquire);
    if (sink == Sink::syslog) {
        syslog(syslog_priority(level), "%s%s", prefix(level), msg);
        return;
    }
    char line[1200];
    int n;
    if (sink == Sink::file) {
        char stamp[32];
        time_t now = time(nullptr);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
        n = snprintf(line, sizeof line, "%s clairfs[%d]: %s%s\n", stamp, getpid(), prefix(level),
                     msg);
    } else {
        n = snprintf(line, sizeof line, "clairfs: %s%s\n", prefix(level), msg);
    }
    if (n <= 0) return;
    size_t len = static_cast<size_t>(n);
    if (len >= sizeof line) { // cut short: still one whole line
        len = sizeof line - 1;
        line[len - 1] = '\n';
    }
    (void)!::write(g_fd.load(std::memory_order_acquire), line, len);
}

} // namespace clairfs::log
