// SPDX-License-Identifier: MIT
// faultfs's rules: which faults apply to which paths, set at run time
// through the control file, and how many of each were injected.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace faultfs {

// What a read of one path must suffer; several rules may match at once.
struct Verdict {
    bool eio = false, shorten = false, hang = false, corrupt = false;
    unsigned delay_ms = 0;
    uint64_t generation = 0; // a hang ends when this changes (clear)
};

class Rules {
public:
    // Applies control-file text, one command a line; "" or why a line is bad.
    std::string apply(const std::string& text);
    // Decides the faults of one read of `path` and counts them.
    Verdict on_read(const std::string& path);
    // True if a write to `path` must fail with ENOSPC (counted).
    bool on_write(const std::string& path);
    uint64_t generation() const;
    void hung(int delta); // reads hanging now, for the report
    // "eio=N short=N delay=N hang=N corrupt=N enospc=N hung_now=N" and the rules.
    std::string report() const;

private:
    struct Rule {
        std::string kind, pattern;
        unsigned ms = 0;
    };
    std::string apply_line(const std::string& line);
    bool matches(const Rule& r, const std::string& path) const;

    mutable std::mutex mu_;
    std::vector<Rule> rules_;
    uint64_t generation_ = 0;
    int64_t hung_now_ = 0;
    uint64_t eio_ = 0, short_ = 0, delay_ = 0, hang_ = 0, corrupt_ = 0, enospc_ = 0;
};

} // namespace faultfs
