// SPDX-License-Identifier: MIT
// Process-wide logging: one line per event, to stderr while in the
// foreground and to syslog (or --log-file) once daemonized.
#pragma once

#include <cstdarg>
#include <string>
#include <string_view>

namespace clairfs::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

bool parse_level(std::string_view text, Level& out);
void set_level(Level level);
Level level();

// Sends later lines to syslog (file empty) or to a file; the
// daemon calls this just before it loses its terminal.
int redirect(const std::string& file);

void write(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define CLAIRFS_LOG(lvl, ...)                                                                      \
    do {                                                                                           \
        if (static_cast<int>(lvl) <= static_cast<int>(::clairfs::log::level()))                    \
            ::clairfs::log::write(lvl, __VA_ARGS__);                                               \
    } while (0)
#define LOG_ERROR(...) CLAIRFS_LOG(::clairfs::log::Level::error, __VA_ARGS__)
#define LOG_WARN(...) CLAIRFS_LOG(::clairfs::log::Level::warn, __VA_ARGS__)
#define LOG_INFO(...) CLAIRFS_LOG(::clairfs::log::Level::info, __VA_ARGS__)
#define LOG_DEBUG(...) CLAIRFS_LOG(::clairfs::log::Level::debug, __VA_ARGS__)

} // namespace clairfs::log
