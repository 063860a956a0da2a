// SPDX-License-Identifier: MIT
#include "mount_checks.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "mount_table.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace clairfs::cli {
namespace {

std::string failed(const std::string& what, const std::string& path, int neg_err) {
    return what + " '" + path + "': " + sys::error_text(neg_err);
}

// ENOTCONN from the mount point itself: a FUSE mount whose daemon is gone
// (killed, or crashed), which the kernel keeps until it is detached.
// statfs, because it always reaches the daemon; a stat may be answered
// from attributes the kernel still caches.
bool is_dead_mount(const std::string& path) {
    struct statfs st;
    return ::statfs(path.c_str(), &st) < 0 && errno == ENOTCONN;
}

std::string dead_mount_advice(const std::string& path, const std::string& served) {
    if (served.empty())
        return "mount point '" + path + "' is a dead FUSE mount (its daemon has exited): detach " +
               "it with 'fusermount3 -u -z " + path + "', then mount again";
    return "mount point '" + path + "' is a dead clairfs mount of '" + served +
           "' (its daemon has exited): detach it with 'clairfs umount --lazy " + path +
           "', then mount again";
}

} // namespace

// A dead mount of the very dataset being mounted is what a killed daemon
// leaves behind, and mounting it again is exactly the recovery: detach it
// (with a line saying so) rather than make the user look up a command.
// Anything else there was put by someone else, and is only explained.
std::string clear_dead_mount(const std::string& path, const std::string& backing) {
    if (!is_dead_mount(path)) return "";
    std::string abs = resolved_path(path), served;
    bool ours = clairfs_mount_backing(abs, served);
    if (!ours || served != resolved_path(backing)) return dead_mount_advice(path, served);
    if (::umount2(abs.c_str(), MNT_DETACH) < 0)
        return dead_mount_advice(path, served) + " (" + sys::error_text(-errno) + ")";
    LOG_WARN("detached the dead clairfs mount of %s on %s left by a daemon that exited; files "
             "still open there keep failing with ENOTCONN",
             served.c_str(), abs.c_str());
    return "";
}

std::string check_fuse_device() {
    struct stat st;
    if (::stat("/dev/fuse", &st) != 0 || !S_ISCHR(st.st_mode))
        return "/dev/fuse is missing: load the fuse kernel module (modprobe fuse) or give the "
               "container the device (--device /dev/fuse)";
    // libfuse opens the device itself before trying fusermount3, and gives
    // up on EACCES; say so now rather than after scanning the whole tree.
    if (geteuid() != 0 && ::access("/dev/fuse", R_OK | W_OK) != 0) {
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
        return std::string("/dev/fuse (mode ") + mode +
               ") is not readable and writable by this user: run as root, or give it mode "
               "0666 as Debian's udev rule does";
    }
    return "";
}

std::string open_backing(const std::string& path, Backing& out) {
    int fd = sys::openat(AT_FDCWD, path.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd == -ENOTDIR) return "backing directory '" + path + "' is not a directory";
    if (fd < 0) return failed("cannot open backing directory", path, fd);
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real)) {
        int err = -errno;
        sys::close(fd);
        return failed("cannot resolve backing directory", path, err);
    }
    out.fd = fd;
    out.real = real;
    return "";
}

std::string check_mountpoint(const std::string& path) {
    struct statx stx;
    if (::statx(AT_FDCWD, path.c_str(), 0, STATX_TYPE, &stx) < 0)
        return failed("cannot use mount point", path, -errno);
    if (!S_ISDIR(stx.stx_mode)) return "mount point '" + path + "' is not a directory";
#if HAVE_STATX_MOUNT_ROOT
    if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
        (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
        return "mount point '" + path + "' is already a mount point (unmount it first)";
#endif
    // fusermount3 would refuse too, but with a less direct message.
    if (geteuid() != 0 && ::access(path.c_str(), W_OK) < 0)
        return failed("no write permission on mount point", path, -errno);
    return "";
}

} // namespace clairfs::cli
