// SPDX-License-Identifier: MIT
#include "clairfs/sys/process_ids.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <charconv>
#include <string>
#include <string_view>

namespace clairfs::sys {

ProcessIds process_ids(uint32_t tid) {
    ProcessIds ids;
    if (tid == 0) return ids;
    const std::string path = "/proc/" + std::to_string(tid) + "/status";
    int fd = sys::openat(AT_FDCWD, path.c_str(), O_RDONLY);
    if (fd < 0) return ids;
    // Tgid and PPid sit in the first lines; 4 KiB holds them.
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    sys::close(fd);
    if (n <= 0) return ids;
    std::string_view text(buf, static_cast<size_t>(n));
    auto field = [text](std::string_view name) {
        uint32_t v = 0;
        size_t at = text.find(name);
        if (at == std::string_view::npos) return v;
        at += name.size();
        while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
        std::from_chars(text.data() + at, text.data() + text.size(), v);
        return v;
    };
    ids.pid = field("\nTgid:");
    ids.ppid = field("\nPPid:");
    return ids;
}

} // namespace clairfs::sys
