// SPDX-License-Identifier: MIT
#include "clairfs/config/memory_budget.hpp"

#include <algorithm>
#include <fstream>
#include <string>
#include <unistd.h>

namespace clairfs::config {
namespace {

// "max" (v2) or a huge number (v1: no limit) both read as no limit.
uint64_t read_limit(const std::string& file) {
    std::ifstream in(file);
    std::string text;
    if (!(in >> text) || text == "max") return UINT64_MAX;
    try {
        return std::stoull(text);
    } catch (...) {
        return UINT64_MAX;
    }
}

uint64_t cgroup_limit() {
    std::ifstream in("/proc/self/cgroup");
    uint64_t limit = UINT64_MAX;
    for (std::string line; std::getline(in, line);) {
        // hierarchy-ID:controllers:path
        size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty())
            limit = std::min(limit, read_limit("/sys/fs/cgroup" + path + "/memory.max"));
        else if (("," + controllers + ",").find(",memory,") != std::string::npos)
            limit = std::min(limit,
                             read_limit("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
    }
    return limit;
}

} // namespace

uint64_t usable_memory() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
    return std::min(phys, cgroup_limit());
}

} // namespace clairfs::config
