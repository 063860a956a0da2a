// SPDX-License-Identifier: MIT
#include "extents.hpp"

#include <cstdio>

namespace clairfs::ranges {

void Progress::tick() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    shown_ = true;
    fprintf(stderr, "\rclairfs ranges: %llu samples\033[K",
            static_cast<unsigned long long>(count_));
}

void Progress::finish(const std::string& line) {
    fprintf(stderr, shown_ ? "\r%s\033[K\n" : "%s\n", line.c_str());
    shown_ = false;
}

} // namespace clairfs::ranges
