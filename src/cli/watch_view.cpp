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

// The view between its first read and its end: each turn reads the
// status when due, redraws what changed, and waits for the next event.
class WatchLoop {
public:
    WatchLoop(const std::string& abs, double interval, WatchSample first, WatchTerminal& term,
              StatusReader& reader)
        : abs_(abs), interval_(interval), term_(term), reader_(reader),
          frame_{abs, interval, clock_text(), "", term.width(), term.height()},
          last_(std::move(first)), read_at_(last_.seconds), due_(read_at_ + interval) {}

    // Until 'q' or a signal (""), or why the view cannot go on.
    std::string run() {
        for (;;) {
            double t = now();
            if (!reading_ && t >= due_) {
                reading_ = reader_.request();
                read_at_ = t;
            }
            std::string note = slow_note(t);
            if (note != frame_.note) {
                frame_.note = note;
                dirty_ = true;
            }
            if (dirty_ && !draw()) return "the terminal is gone";
            auto event = term_.wait(wait_seconds(t, note), reader_.fd());
            if (event == WatchTerminal::Event::quit) return "";
            if (std::string failure = handle(event); !failure.empty()) return failure;
        }
    }

private:
    // Said under the header while a read is slow_read() late.
    std::string slow_note(double t) const {
        if (!reading_ || t - read_at_ < slow_read(interval_)) return "";
        return "the status has not answered for " +
               std::to_string(static_cast<int>(t - read_at_)) + " s";
    }

    // Until the read is late (then each second, to count up the note), or
    // until the next read is due.
    double wait_seconds(double t, const std::string& note) const {
        if (!reading_) return due_ - t;
        return note.empty() ? read_at_ + slow_read(interval_) - t : 1.0;
    }

    bool draw() {
        if (!term_.draw(watch_lines(last_, have_before_ ? &before_ : nullptr, frame_), clear_))
            return false;
        dirty_ = clear_ = false;
        return true;
    }

    // "" or why the view ends.
    std::string handle(WatchTerminal::Event event) {
        if (event == WatchTerminal::Event::refresh && !reading_) due_ = now();
        if (event == WatchTerminal::Event::resized) {
            frame_.width = term_.width();
            frame_.height = term_.height();
            dirty_ = clear_ = true;
        }
        int err = 0;
        std::string text;
        if (event != WatchTerminal::Event::ready || !reader_.take(err, text)) return "";
        reading_ = false;
        due_ = read_at_ + interval_;
        std::string failure;
        auto j = parse_status(abs_, err, text, failure);
        if (!failure.empty()) return failure;
        before_ = std::move(last_);
        last_ = {std::move(j), read_at_};
        have_before_ = dirty_ = true;
        frame_.clock = clock_text();
        return "";
    }

    const std::string& abs_;
    double interval_;
    WatchTerminal& term_;
    StatusReader& reader_;
    WatchFrame frame_;
    WatchSample last_, before_;
    bool have_before_ = false;
    bool reading_ = false, dirty_ = true, clear_ = false;
    double read_at_, due_;
};

} // namespace

int watch_view(const std::string& abs, double interval) {
    const std::string path = status_path(abs);
    std::string failure, text;
    // The first read before the terminal is taken over: a mount that does
    // not answer fails here with the screen untouched.
    double read_at = now();
    int err = read_control_file(path, text);
    WatchSample first{parse_status(abs, err, text, failure), read_at};
    if (!failure.empty()) {
        LOG_ERROR("%s", failure.c_str());
        return exit_failure;
    }
    int stop = 0;
    {
        WatchTerminal term;
        StatusReader reader(path);
        failure = WatchLoop(abs, interval, std::move(first), term, reader).run();
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
