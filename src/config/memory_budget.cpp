// SPDX-License-Identifier: MIT
#include "clairfs/config/memory_budget.hpp"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
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

// The sum of the named counters of a "key value" file (memory.stat,
// /proc/meminfo; a unit after the value is ignored), or UINT64_MAX if the
// file cannot be read or lacks one of them.
uint64_t sum_of(const std::string& file, std::initializer_list<std::string_view> keys) {
    std::ifstream in(file);
    uint64_t sum = 0;
    size_t found = 0;
    std::string key;
    uint64_t value;
    while (in >> key >> value) {
        if (!key.empty() && key.back() == ':') key.pop_back();
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
            sum += value;
            ++found;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return found == keys.size() ? sum : UINT64_MAX;
}

struct CgroupMemory {
    std::string v1, v2; // directories of this process's memory cgroup, or ""
};

CgroupMemory cgroup_dirs() {
    std::ifstream in("/proc/self/cgroup");
    CgroupMemory dirs;
    for (std::string line; std::getline(in, line);) {
        // hierarchy-ID:controllers:path
        size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty())
            dirs.v2 = "/sys/fs/cgroup" + path;
        else if (("," + controllers + ",").find(",memory,") != std::string::npos)
            dirs.v1 = "/sys/fs/cgroup/memory" + path;
    }
    return dirs;
}

uint64_t cgroup_limit() {
    CgroupMemory dirs = cgroup_dirs();
    uint64_t limit = UINT64_MAX;
    if (!dirs.v2.empty()) limit = std::min(limit, read_limit(dirs.v2 + "/memory.max"));
    if (!dirs.v1.empty()) limit = std::min(limit, read_limit(dirs.v1 + "/memory.limit_in_bytes"));
    return limit;
}

uint64_t headroom(uint64_t limit, uint64_t used) {
    if (limit == UINT64_MAX || used == UINT64_MAX) return UINT64_MAX;
    return limit > used ? limit - used : 0;
}

} // namespace

uint64_t usable_memory() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : UINT64_MAX;
    return std::min(phys, cgroup_limit());
}

uint64_t page_cache_room() {
    // The system: what MemAvailable leaves out is what reclaim cannot free.
    uint64_t room = sum_of("/proc/meminfo", {"MemAvailable"}); // KiB
    if (room != UINT64_MAX) room *= 1024;
    CgroupMemory dirs = cgroup_dirs();
    if (!dirs.v2.empty())
        room = std::min(room, headroom(read_limit(dirs.v2 + "/memory.max"),
                                   sum_of(dirs.v2 + "/memory.stat", {"anon", "shmem"})));
    if (!dirs.v1.empty())
        room = std::min(room, headroom(read_limit(dirs.v1 + "/memory.limit_in_bytes"),
                                   sum_of(dirs.v1 + "/memory.stat", {"total_rss", "total_shmem"})));
    return room;
}

} // namespace clairfs::config
