// SPDX-License-Identifier: MIT
#include "mount_daemon.hpp"

#include "clairfs/config/json_keys.hpp"

#include <chrono>
#include <dirent.h>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace clairfs::cli {
namespace {

// A /proc file's text; "" when it is gone (the process exited).
std::string read_text(const std::string& path) {
    std::string text;
    return config::read_text_file(path, text) ? text : "";
}

std::vector<pid_t> all_pids() {
    std::vector<pid_t> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (pid > 0 && *end == '\0' && pid != ::getpid()) out.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
    return out;
}

// The targets of a process's descriptors; empty when /proc hides them (a
// process of another user, or one that has just exited).
std::vector<std::string> fd_targets(pid_t pid) {
    std::vector<std::string> out;
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    char buf[4096];
    while (dirent* e = ::readdir(d)) {
        ssize_t n = ::readlinkat(::dirfd(d), e->d_name, buf, sizeof buf);
        if (n > 0) out.emplace_back(buf, static_cast<size_t>(n));
    }
    ::closedir(d);
    return out;
}

bool serves(pid_t pid, const std::string& backing) {
    // "clairfs", or the name of a link to it such as mount.clairfs.
    std::string comm = read_text("/proc/" + std::to_string(pid) + "/comm");
    if (comm.find("clairfs") == std::string::npos) return false;
    bool fuse = false, dir = false;
    for (const auto& t : fd_targets(pid)) {
        fuse |= t == "/dev/fuse";
        dir |= t == backing;
    }
    return fuse && dir;
}

// The daemon keeps the command line it was started with; the mount point
// there may be relative, so its last component is what can be compared.
bool names_mountpoint(pid_t pid, const std::string& mountpoint) {
    std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    std::string last = mountpoint.substr(mountpoint.rfind('/') + 1);
    std::istringstream args(cmdline);
    std::string arg;
    while (std::getline(args, arg, '\0')) {
        while (arg.size() > 1 && arg.back() == '/') arg.pop_back();
        if (arg == mountpoint || arg == last || arg.ends_with("/" + last)) return true;
    }
    return false;
}

size_t threads(pid_t pid) {
    size_t n = 0;
    DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    return n;
}

// Whether `pid` holds a flock (the SSD cache's), from /proc/locks lines
// such as "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF".
bool holds_flock(pid_t pid) {
    std::istringstream locks(read_text("/proc/locks"));
    std::string line;
    while (std::getline(locks, line)) {
        std::istringstream fields(line);
        std::string id, kind, mode, access, owner;
        fields >> id >> kind >> mode >> access >> owner;
        if (kind == "FLOCK" && owner == std::to_string(pid)) return true;
    }
    return false;
}

// A zombie has let go of everything, but a thread group leader turns
// zombie before its other threads have exited and released the files
// (the cache lock among them) they share. Threads stuck for good in a hung
// backing read keep a dead daemon's files open: such a daemon releases the
// cache lock itself before it exits, so it counts as gone once the lock is.
bool alive(pid_t pid) {
    std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
    if (stat[paren + 2] != 'Z') return true;
    return threads(pid) > 1 && holds_flock(pid);
}

} // namespace

std::vector<pid_t> mount_daemons(const std::string& backing, const std::string& mountpoint) {
    std::vector<pid_t> found;
    if (backing.empty()) return found;
    for (pid_t pid : all_pids())
        if (serves(pid, backing)) found.push_back(pid);
    if (found.size() <= 1) return found;
    std::vector<pid_t> named;
    for (pid_t pid : found)
        if (names_mountpoint(pid, mountpoint)) named.push_back(pid);
    return named;
}

bool wait_for_exit(const std::vector<pid_t>& pids, double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        bool any = false;
        for (pid_t pid : pids) any |= alive(pid);
        if (!any) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

} // namespace clairfs::cli
