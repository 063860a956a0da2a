// SPDX-License-Identifier: MIT
#include "scan_progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace clairfs::index {

using namespace std::chrono_literals;

ScanProgress::ScanProgress(std::string root, Progress mode, const std::atomic<uint64_t>& entries)
    : root_(std::move(root)), mode_(mode), tty_(isatty(STDERR_FILENO) == 1), entries_(entries),
      start_(std::chrono::steady_clock::now()) {
    if (mode_ != Progress::never) thread_ = std::thread([this] { run(); });
}

ScanProgress::~ScanProgress() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (printed_)
        print(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(),
              true);
}

void ScanProgress::run() {
    auto period = tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(3000);
    std::chrono::milliseconds quiet = mode_ == Progress::always ? period : 1000ms;
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, quiet, [this] { return stop_; })) return;
    for (;;) {
        print(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(),
              false);
        printed_ = true;
        if (wake_.wait_for(lock, period, [this] { return stop_; })) return;
    }
}

void ScanProgress::print(double seconds, bool final) {
    if (final && !tty_) return; // the summary line that follows says it all
    auto n = static_cast<unsigned long long>(entries_.load(std::memory_order_relaxed));
    double rate = seconds > 0 ? static_cast<double>(n) / seconds : 0;
    if (tty_)
        fprintf(stderr, "\rclairfs: scanning %s: %llu entries (%.0f/s, %.1f s)\x1b[K%s",
                root_.c_str(), n, rate, seconds, final ? "\n" : "");
    else
        fprintf(stderr, "clairfs: scanning %s: %llu entries (%.0f/s, %.1f s)\n", root_.c_str(), n,
                rate, seconds);
    fflush(stderr);
}

} // namespace clairfs::index
