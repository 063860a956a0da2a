// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/index/scanner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace clairfs::index {

// Prints "scanning ROOT: N entries (R/s)" on stderr while a scan runs: on a
// terminal it rewrites one line, otherwise it prints a line every few
// seconds; in auto mode nothing appears for scans shorter than a second.
class ScanProgress {
public:
    ScanProgress(std::string root, Progress mode, const std::atomic<uint64_t>& entries);
    ~ScanProgress();
    ScanProgress(const ScanProgress&) = delete;
    ScanProgress& operator=(const ScanProgress&) = delete;

private:
    void run();
    void print(double seconds, bool final);

    std::string root_;
    Progress mode_;
    bool tty_;
    const std::atomic<uint64_t>& entries_;
    std::chrono::steady_clock::time_point start_;
    // Lock order: leaf; guards stop_ only.
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    bool printed_ = false;
    std::thread thread_;
};

} // namespace clairfs::index
