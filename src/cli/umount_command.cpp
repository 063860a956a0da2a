// SPDX-License-Identifier: MIT
// `clairfs umount MOUNTPOINT [--lazy]`.
#include "clairfs/cli/commands.hpp"
#include "clairfs/log.hpp"
#include "mount_daemon.hpp"
#include "mount_table.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace clairfs::cli {
namespace {

// Unprivileged users unmount through the setuid helper, as libfuse does.
int run_fusermount(const std::string& mountpoint, bool lazy) {
    pid_t pid = fork();
    if (pid < 0) return -errno;
    if (pid == 0) {
        std::vector<const char*> argv = {"fusermount3", "-u"};
        if (lazy) argv.push_back("-z");
        argv.push_back("--");
        argv.push_back(mountpoint.c_str());
        argv.push_back(nullptr);
        execvp("fusermount3", const_cast<char**>(argv.data()));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    return -EBUSY; // fusermount3 has printed why
}

int unmount(const std::string& mountpoint, bool lazy) {
    if (geteuid() != 0) return run_fusermount(mountpoint, lazy);
    return ::umount2(mountpoint.c_str(), lazy ? MNT_DETACH : 0) == 0 ? 0 : -errno;
}

// Long enough for a daemon that finishes its in-flight SSD writes and
// journal; bounded, so a daemon stuck on a hung file system cannot hang
// the command.
constexpr double daemon_exit_seconds = 30;

// The kernel lets go of the mount before the daemon has exited and released
// the cache file; `clairfs umount M && clairfs mount B M --cache-dir D`
// must find it free, so the command returns only after the daemon.
int wait_for_daemon(const std::string& target, const std::vector<pid_t>& pids) {
    if (wait_for_exit(pids, daemon_exit_seconds)) return exit_ok;
    LOG_ERROR("unmounted '%s', but its daemon (pid %d) is still running after %.0f s; its "
              "cache directory stays locked until it exits (see its log)",
              target.c_str(), static_cast<int>(pids.front()), daemon_exit_seconds);
    return exit_failure;
}

void print_umount_help() {
    printf("usage: clairfs umount MOUNTPOINT [--lazy]\n\n"
           "Unmounts a clairfs mount and returns once its daemon has exited (so a new\n"
           "mount finds the cache directory free).\n"
           "  -z, --lazy   detach now even if files are open; the daemon serves them until\n"
           "               they are closed, then exits\n");
}

// The mount point and --lazy; an exit code when the command ends here
// (--help, or a usage error).
std::optional<int> parse_umount_args(const std::vector<std::string>& args, std::string& target,
                              bool& lazy) {
    for (const auto& a : args) {
        if (a == "--lazy" || a == "-z") {
            lazy = true;
        } else if (a == "--help" || a == "-h") {
            print_umount_help();
            return exit_ok;
        } else if (!a.empty() && a[0] == '-') {
            fprintf(stderr, "clairfs: unknown option '%s' (see clairfs umount --help)\n",
                    a.c_str());
            return exit_usage;
        } else if (target.empty()) {
            target = a;
        } else {
            fprintf(stderr, "clairfs: unexpected argument '%s'\n", a.c_str());
            return exit_usage;
        }
    }
    if (target.empty()) {
        fprintf(stderr, "clairfs: expected MOUNTPOINT (see clairfs umount --help)\n");
        return exit_usage;
    }
    return std::nullopt;
}

} // namespace

int umount_command(const std::vector<std::string>& args) {
    bool lazy = false;
    std::string target;
    if (std::optional<int> rc = parse_umount_args(args, target, lazy)) return *rc;
    std::string abs = resolved_path(target), backing;
    if (!clairfs_mount_backing(abs, backing)) {
        LOG_ERROR("'%s' is not a clairfs mount point", target.c_str());
        return exit_failure;
    }
    // Found before the unmount: afterwards nothing ties the daemon to it.
    // A lazy unmount leaves the daemon serving open files: nothing to wait for.
    std::vector<pid_t> daemons = lazy ? std::vector<pid_t>{} : mount_daemons(backing, abs);
    int rv = unmount(abs, lazy);
    if (rv == -EBUSY) {
        LOG_ERROR("cannot unmount '%s': files are open on it (close them, or use --lazy)",
                  target.c_str());
        return exit_failure;
    }
    if (rv < 0) {
        LOG_ERROR("cannot unmount '%s': %s", target.c_str(), strerror(-rv));
        return exit_failure;
    }
    return wait_for_daemon(target, daemons);
}

} // namespace clairfs::cli
