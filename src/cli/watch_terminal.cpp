// SPDX-License-Identifier: MIT
#include "watch_terminal.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace clairfs::cli {
namespace {

// The signals the view catches. They stay blocked except inside ppoll, so
// one that arrives between two waits is seen at the next wait instead of
// being lost between the check of a flag and the poll.
constexpr std::array<int, 7> caught = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
                                       SIGWINCH, SIGTSTP, SIGCONT};

volatile sig_atomic_t g_stop = 0, g_resized = 0, g_suspend = 0;

void on_signal(int sig) {
    if (sig == SIGWINCH || sig == SIGCONT)
        g_resized = 1;
    else if (sig == SIGTSTP)
        g_suspend = 1;
    else
        g_stop = sig;
}

sigset_t caught_set() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : caught) sigaddset(&set, s);
    return set;
}

void handle(int sig, struct sigaction* old) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    sigaction(sig, &sa, old);
}

// Everything, even after EINTR or a short write; false if the terminal is
// gone (EIO after a hang-up).
bool write_all(const std::string& s) {
    return sys::write_full(STDOUT_FILENO, s.data(), s.size()) == 0;
}

// Alternate screen (the shell's screen comes back intact at exit), cursor
// hidden, and the reverse.
constexpr const char* enter_screen = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr const char* leave_screen = "\x1b[?25h\x1b[?1049l";

} // namespace

struct WatchTerminal::Saved {
    sigset_t mask;
    std::array<struct sigaction, caught.size()> actions;
    termios tio;
};

bool watch_terminal_usable() {
    if (!isatty(STDOUT_FILENO)) return false;
    const char* term = getenv("TERM");
    return !term || strcmp(term, "dumb") != 0;
}

WatchTerminal::WatchTerminal() : saved_(std::make_unique<Saved>()) {
    fflush(stdout); // the view writes to the descriptor, past stdio
    sigset_t set = caught_set();
    pthread_sigmask(SIG_BLOCK, &set, &saved_->mask);
    g_stop = 0;
    g_resized = 0;
    g_suspend = 0;
    for (size_t i = 0; i < caught.size(); ++i) handle(caught[i], &saved_->actions[i]);
    keys_ = isatty(STDIN_FILENO);
    saved_tio_ = keys_ && tcgetattr(STDIN_FILENO, &saved_->tio) == 0;
    enter();
    measure();
}

WatchTerminal::~WatchTerminal() {
    leave();
    for (size_t i = 0; i < caught.size(); ++i) sigaction(caught[i], &saved_->actions[i], nullptr);
    pthread_sigmask(SIG_SETMASK, &saved_->mask, nullptr);
}

void WatchTerminal::enter() {
    if (saved_tio_) {
        // Keys as typed and not echoed; ISIG stays, so ^C and ^Z still
        // send their signals.
        termios raw = saved_->tio;
        raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    write_all(enter_screen);
    inside_ = true;
}

void WatchTerminal::leave() {
    if (!inside_) return;
    write_all(leave_screen);
    if (saved_tio_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_->tio);
    inside_ = false;
}

void WatchTerminal::measure() {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        width_ = ws.ws_col;
        height_ = ws.ws_row;
    }
}

// ^Z: the shell's screen back, then stop as the default action would;
// once continued, the view again.
void WatchTerminal::suspend() {
    leave();
    sigset_t tstp;
    sigemptyset(&tstp);
    sigaddset(&tstp, SIGTSTP);
    signal(SIGTSTP, SIG_DFL);
    raise(SIGTSTP); // pending while blocked, delivered by the unblock
    pthread_sigmask(SIG_UNBLOCK, &tstp, nullptr);
    pthread_sigmask(SIG_BLOCK, &tstp, nullptr);
    handle(SIGTSTP, nullptr);
    g_suspend = 0;
    enter();
    measure();
}

bool WatchTerminal::draw(const std::vector<std::string>& lines, bool clear) {
    // Each row is cleared before it is written rather than after: a row as
    // wide as the terminal leaves the cursor past its last column, where
    // erasing to the end of the line would take its last character too.
    std::string out = clear ? "\x1b[H\x1b[2J" : "\x1b[H";
    size_t rows = std::min(lines.size(), static_cast<size_t>(height_));
    for (size_t i = 0; i < rows; ++i) {
        if (i) out += "\r\n";
        out += "\x1b[K" + lines[i];
    }
    // No newline after the bottom row: it would scroll the screen.
    if (rows < static_cast<size_t>(height_)) out += "\r\n\x1b[J";
    return write_all(out);
}

WatchTerminal::Event WatchTerminal::wait(double seconds, int fd) {
    for (;;) {
        if (std::optional<Event> e = signalled()) return *e;
        pollfd fds[2];
        nfds_t n = 0;
        if (keys_) fds[n++] = {STDIN_FILENO, POLLIN, 0};
        if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
        seconds = std::max(0.0, seconds);
        timespec ts{static_cast<time_t>(seconds),
                    static_cast<long>((seconds - std::floor(seconds)) * 1e9)};
        sigset_t during = saved_->mask;
        for (int s : caught) sigdelset(&during, s);
        int r = ppoll(fds, n, &ts, &during);
        if (r < 0 && errno == EINTR) {
            seconds = 0; // a flag is set: seen at the top, without waiting
            continue;
        }
        if (r <= 0) return Event::timeout;
        if (keys_ && fds[0].revents) return typed(fd >= 0 && fds[n - 1].revents);
        return Event::ready;
    }
}

std::optional<WatchTerminal::Event> WatchTerminal::signalled() {
    if (g_stop) {
        stop_ = g_stop;
        return Event::quit;
    }
    if (g_suspend) {
        suspend();
        return Event::resized;
    }
    if (g_resized) {
        g_resized = 0;
        measure();
        return Event::resized;
    }
    return std::nullopt;
}

WatchTerminal::Event WatchTerminal::typed(bool fd_ready) {
    char buf[64];
    ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
    // End of input (a hang-up): no more keys, signals still work.
    if (got <= 0) keys_ = false;
    for (ssize_t i = 0; i < got; ++i) {
        if (buf[i] == 'q' || buf[i] == 'Q') return Event::quit;
        if (buf[i] == ' ') return Event::refresh;
    }
    return fd_ready ? Event::ready : Event::timeout;
}

} // namespace clairfs::cli
