// SPDX-License-Identifier: MIT
#include "fault_rules.hpp"

#include <fnmatch.h>
#include <sstream>

namespace faultfs {

std::string Rules::apply(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
        if (auto why = apply_line(line); !why.empty()) return why;
    return "";
}

std::string Rules::apply_line(const std::string& line) {
    std::istringstream words(line);
    Rule r;
    if (!(words >> r.kind)) return ""; // blank line
    std::lock_guard lk(mu_);
    if (r.kind == "clear") {
        rules_.clear();
        ++generation_; // releases hung reads
        return "";
    }
    if (r.kind == "delay" && !(words >> r.ms)) return "delay needs MS: " + line;
    bool known = r.kind == "eio" || r.kind == "short" || r.kind == "delay" || r.kind == "hang" ||
                 r.kind == "corrupt" || r.kind == "enospc";
    if (!known) return "unknown rule: " + line;
    if (!(words >> r.pattern)) return "rule without a pattern: " + line;
    rules_.push_back(r);
    return "";
}

// A glob if the pattern has glob characters (matched against the whole
// path), else a substring: "img0007" hits every path that contains it.
bool Rules::matches(const Rule& r, const std::string& path) const {
    if (r.pattern.find_first_of("*?[") != std::string::npos)
        return fnmatch(r.pattern.c_str(), path.c_str(), 0) == 0;
    return path.find(r.pattern) != std::string::npos;
}

Verdict Rules::on_read(const std::string& path) {
    std::lock_guard lk(mu_);
    Verdict v;
    v.generation = generation_;
    for (const Rule& r : rules_) {
        if (!matches(r, path)) continue;
        if (r.kind == "eio") v.eio = true;
        if (r.kind == "short") v.shorten = true;
        if (r.kind == "hang") v.hang = true;
        if (r.kind == "corrupt") v.corrupt = true;
        if (r.kind == "delay") v.delay_ms = std::max(v.delay_ms, r.ms);
    }
    // Counted as what the read will suffer: a hang preempts an error.
    hang_ += v.hang;
    eio_ += !v.hang && v.eio;
    short_ += !v.hang && !v.eio && v.shorten;
    corrupt_ += !v.hang && !v.eio && v.corrupt;
    delay_ += v.delay_ms > 0;
    return v;
}

bool Rules::on_write(const std::string& path) {
    std::lock_guard lk(mu_);
    for (const Rule& r : rules_)
        if (r.kind == "enospc" && matches(r, path)) {
            ++enospc_;
            return true;
        }
    return false;
}

uint64_t Rules::generation() const {
    std::lock_guard lk(mu_);
    return generation_;
}

void Rules::hung(int delta) {
    std::lock_guard lk(mu_);
    hung_now_ += delta;
}

std::string Rules::report() const {
    std::lock_guard lk(mu_);
    std::ostringstream out;
    out << "eio=" << eio_ << " short=" << short_ << " delay=" << delay_ << " hang=" << hang_
        << " corrupt=" << corrupt_ << " enospc=" << enospc_ << " hung_now=" << hung_now_ << "\n";
    for (const Rule& r : rules_) {
        out << r.kind;
        if (r.kind == "delay") out << ' ' << r.ms;
        out << ' ' << r.pattern << "\n";
    }
    return out.str();
}

} // namespace faultfs
