// SPDX-License-Identifier: MIT
#include "clairfs/log.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <mutex>
#include <syslog.h>
#include <unistd.h>

namespace clairfs::log {
namespace {

enum class Sink { stderr_stream, syslog, file };

std::atomic<Level> g_level{Level::info};
// Lock order: leaf; held only while one line is formatted and written.
std::mutex g_mutex;
Sink g_sink = Sink::stderr_stream;
int g_fd = STDERR_FILENO;

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
    std::lock_guard lock(g_mutex);
    if (file.empty()) {
        openlog("clairfs", LOG_PID, LOG_DAEMON);
        g_sink = Sink::syslog;
        return 0;
    }
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    g_fd = fd;
    g_sink = Sink::file;
    return 0;
}

void write(Level level, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    std::lock_guard lock(g_mutex);
    if (g_sink == Sink::syslog) {
        syslog(syslog_priority(level), "%s%s", prefix(level), msg);
        return;
    }
    char line[1200];
    int n;
    if (g_sink == Sink::file) {
        char stamp[32];
        time_t now = time(nullptr);
        struct tm tm;
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
        n = snprintf(line, sizeof line, "%s clairfs[%d]: %s%s\n", stamp, getpid(), prefix(level),
                     msg);
    } else {
        n = snprintf(line, sizeof line, "clairfs: %s%s\n", prefix(level), msg);
    }
    if (n > 0)
        (void)!::write(g_fd, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
}

} // namespace clairfs::log
