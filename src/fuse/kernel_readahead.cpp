// SPDX-License-Identifier: MIT
#include "clairfs/fuse/kernel_readahead.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/mount_info.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

namespace clairfs::fuse {
namespace {

// The number in a sysfs attribute file, or -errno.
int64_t read_number(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    char buf[32] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    int err = errno;
    ::close(fd);
    if (n <= 0) return n < 0 ? -err : -EIO;
    char* end = nullptr;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || v < 0) return -EIO;
    return v;
}

// 0 or -errno.
int write_number(const std::string& path, uint64_t v) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    std::string text = std::to_string(v) + "\n";
    ssize_t n = ::write(fd, text.data(), text.size());
    int err = errno;
    ::close(fd);
    if (n < 0) return -err;
    return n == static_cast<ssize_t>(text.size()) ? 0 : -EIO;
}

// The bdi file of a mount's device: "0:40" -> /sys/class/bdi/0:40/read_ahead_kb.
std::string readahead_path(const std::string& device) {
    return "/sys/class/bdi/" + device + "/read_ahead_kb";
}

} // namespace

void KernelReadahead::set(const std::string& abs_mountpoint, uint64_t bytes) {
    uint64_t asked = bytes / 1024;
    std::string bdi, why;
    int64_t now = -1;
    // Not a stat() of the mount point: the daemon does not serve yet, and
    // the kernel would hold the stat until it does.
    auto mount = sys::find_mount(abs_mountpoint, "fuse.clairfs");
    if (!mount) {
        why = "the mount is not in /proc/self/mountinfo";
    } else {
        bdi = mount->device;
        std::string path = readahead_path(bdi);
        int rc = write_number(path, asked);
        now = read_number(path);
        if (rc == -EACCES || rc == -EPERM)
            why = "raising it needs root";
        else if (rc < 0)
            why = "cannot write " + path + ": " + strerror(-rc);
        else if (now < 0)
            why = "cannot read " + path + " back: " + strerror(static_cast<int>(-now));
        else if (static_cast<uint64_t>(now) != asked)
            why = "the kernel took " + std::to_string(now) + " KiB";
    }
    if (!why.empty())
        LOG_INFO("kernel readahead on the mount not set to %llu KiB (--max-read): %s",
                 static_cast<unsigned long long>(asked), why.c_str());
    std::lock_guard lk(mu_);
    bdi_ = std::move(bdi);
    asked_kb_ = asked;
    kb_ = now;
    why_not_ = std::move(why);
}

void KernelReadahead::status(nlohmann::json& out) const {
    std::lock_guard lk(mu_);
    out = nlohmann::json::object();
    out["kb"] = kb_ >= 0 ? nlohmann::json(kb_) : nlohmann::json(nullptr);
    out["asked_kb"] = asked_kb_;
    out["bdi"] = bdi_.empty() ? nlohmann::json(nullptr) : nlohmann::json(bdi_);
    out["reason"] = why_not_.empty() ? nlohmann::json(nullptr) : nlohmann::json(why_not_);
}

} // namespace clairfs::fuse
