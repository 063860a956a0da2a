// SPDX-License-Identifier: MIT
// The terminal while `clairfs status --watch` draws on it: the alternate
// screen with the cursor hidden, keys read as typed, and the signals that
// end, suspend or resize the view caught; the destructor gives the user
// back the screen, cursor and line editing they had.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clairfs::cli {

// Whether the view can draw on stdout: a terminal (not a pipe or a file,
// where reports are appended instead) that moves its cursor (TERM is not
// "dumb").
bool watch_terminal_usable();

class WatchTerminal {
public:
    WatchTerminal();
    ~WatchTerminal();
    WatchTerminal(const WatchTerminal&) = delete;
    WatchTerminal& operator=(const WatchTerminal&) = delete;

    // Columns and rows, as the terminal last said (80 x 24 if it does not).
    int width() const { return width_; }
    int height() const { return height_; }

    // Draws `lines` from the top left over the previous frame, in one
    // write so the screen never shows half a frame; `clear` wipes it first
    // (after a resize, whose reflow leaves debris). False once the terminal
    // is gone.
    bool draw(const std::vector<std::string>& lines, bool clear);

    enum class Event {
        timeout, // or a key the view does not use: look at the clock
        ready,   // `fd` is readable
        quit,    // 'q', or a signal that ends the view (stop_signal())
        refresh, // space
        resized, // or back from a suspension: redraw in full
    };
    // Waits up to `seconds` for a key, a signal or `fd` (-1: none).
    Event wait(double seconds, int fd);

    // The signal that ended the view (SIGINT, SIGTERM, SIGHUP, SIGQUIT),
    // 0 for 'q'. Once the terminal is restored the caller raises it again,
    // so the shell sees the command end as it asked.
    int stop_signal() const { return stop_; }

private:
    // The event a signal's flag means, if one is set.
    std::optional<Event> signalled();
    // The keys waiting on stdin: quit or refresh, else ready if `fd` is.
    Event typed(bool fd_ready);
    void enter();
    void leave();
    void measure();
    void suspend();
    bool keys_ = false;      // stdin is the terminal: 'q' and space work
    bool saved_tio_ = false; // saved_ holds the line settings to restore
    bool inside_ = false;    // on the alternate screen
    int width_ = 80, height_ = 24;
    int stop_ = 0;
    struct Saved; // signal mask, handlers and line settings before
    std::unique_ptr<Saved> saved_;
};

} // namespace clairfs::cli
