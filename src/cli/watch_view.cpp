// SPDX-License-Identifier: MIT
// The loop of `clairfs status --watch` on a terminal: read the status,
// draw it, wait for the next refresh, a key or a signal.
#include "watch_view.hpp"
#include "clairfs/cli/commands.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_client.hpp"
#include "mount_table.hpp"
#include "status_reader.hpp"
#include "status_watch.hpp"
#include "watch_terminal.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>

namespace clairfs::cli {
namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string clock_text() {
    time_t t = time(nullptr);
    struct tm tm;
    char buf[16];
    strftime(buf, sizeof buf, "%H:%M:%S", localtime_r(&t, &tm));
    return buf;
}

// A read this much slower than its refresh says so on the screen, which
// otherwise looks like a mount with nothing to report.
double slow_read(double interval) {
    return std::max(2.0, 2 * interval);
}

// The status document, or null with `failure` saying why there is none.
nlohmann::json parse_status(const std::string& abs, int err, const std::string& text,
                            std::string& failure) {
    const std::string path = status_path(abs);
    if (err < 0) {
        // Unmounted, the path is a plain directory again, and "no such
        // file" would send the user looking for the wrong thing.
        failure = is_clairfs_mount(abs)
                      ? "cannot read " + path + ": " + sys::error_text(err)
                      : abs + " is no longer a clairfs mount (unmounted while watched)";
        return {};
    }
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        failure = path + " is not a JSON object";
        return {};
    }
    return j;
}

} // namespace

int watch_view(const std::string& abs, double interval) {
    const std::string path = status_path(abs);
    std::string failure, text;
    // The first read before the terminal is taken over: a mount that does
    // not answer fails here with the screen untouched.
    double read_at = now();
    int err = read_control_file(path, text);
    WatchSample last{parse_status(abs, err, text, failure), read_at}, before;
    if (!failure.empty()) {
        LOG_ERROR("%s", failure.c_str());
        return exit_failure;
    }
    int stop = 0;
    {
        WatchTerminal term;
        StatusReader reader(path);
        WatchFrame frame{abs, interval, clock_text(), "", term.width(), term.height()};
        bool have_before = false;
        bool reading = false, dirty = true, clear = false;
        double due = read_at + interval;
        for (;;) {
            double t = now();
            if (!reading && t >= due) {
                reading = reader.request();
                read_at = t;
            }
            std::string note;
            if (reading && t - read_at >= slow_read(interval))
                note = "the status has not answered for " +
                       std::to_string(static_cast<int>(t - read_at)) + " s";
            if (note != frame.note) {
                frame.note = note;
                dirty = true;
            }
            if (dirty) {
                if (!term.draw(watch_lines(last, have_before ? &before : nullptr, frame), clear)) {
                    failure = "the terminal is gone";
                    break;
                }
                dirty = clear = false;
            }
            double wait = reading ? (note.empty() ? read_at + slow_read(interval) - t : 1.0)
                                  : due - t;
            auto event = term.wait(wait, reader.fd());
            if (event == WatchTerminal::Event::quit) break;
            if (event == WatchTerminal::Event::refresh && !reading) due = now();
            if (event == WatchTerminal::Event::resized) {
                frame.width = term.width();
                frame.height = term.height();
                dirty = clear = true;
            }
            if (event != WatchTerminal::Event::ready || !reader.take(err, text)) continue;
            reading = false;
            due = read_at + interval;
            auto j = parse_status(abs, err, text, failure);
            if (!failure.empty()) break;
            before = std::move(last);
            last = {std::move(j), read_at};
            have_before = dirty = true;
            frame.clock = clock_text();
        }
        stop = term.stop_signal();
    }
    // The terminal is the user's again: now the line, or the signal.
    if (stop) {
        signal(stop, SIG_DFL);
        raise(stop);
        return 128 + stop;
    }
    if (!failure.empty()) {
        LOG_ERROR("%s", failure.c_str());
        return exit_failure;
    }
    return exit_ok;
}

} // namespace clairfs::cli
