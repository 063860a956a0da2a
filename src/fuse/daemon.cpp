// SPDX-License-Identifier: MIT
#include "clairfs/fuse/daemon.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace clairfs::fuse {
namespace {

void to_dev_null(int target) {
    int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    dup2(fd, target);
    if (fd != target) ::close(fd);
}

} // namespace

std::string detach(Detached& out) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) return std::string("pipe: ") + sys::error_text(-errno);
    pid_t pid = fork();
    if (pid < 0) return std::string("fork: ") + sys::error_text(-errno);
    if (pid > 0) {
        ::close(fds[1]);
        out = {true, fds[0], pid};
        return "";
    }
    ::close(fds[0]);
    setsid();
    if (chdir("/") < 0) {
    }
    to_dev_null(STDIN_FILENO);
    to_dev_null(STDOUT_FILENO);
    out = {false, fds[1], -1};
    return "";
}

void notify_ready(int& ready_fd, bool keep_terminal) {
    if (ready_fd < 0) return;
    char byte = 'R';
    (void)!::write(ready_fd, &byte, 1);
    ::close(ready_fd);
    ready_fd = -1;
    if (!keep_terminal) to_dev_null(STDERR_FILENO);
}

std::string wait_ready(int ready_fd, const std::string& mountpoint) {
    char byte = 0;
    ssize_t n;
    while ((n = ::read(ready_fd, &byte, 1)) < 0 && errno == EINTR) {
    }
    ::close(ready_fd);
    if (n != 1) return "the daemon exited during start-up (see the messages above)";
    // INIT has reached our callback, but libfuse may still reject it; the
    // first real request blocks until the handshake is over and tells.
    struct statfs st;
    if (::statfs(mountpoint.c_str(), &st) < 0)
        return "the mount on '" + mountpoint + "' does not answer (" + sys::error_text(-errno) +
               "); see the daemon's log";
    return "";
}

} // namespace clairfs::fuse
