// SPDX-License-Identifier: MIT
// Background mode that only reports success once the mount answers.
// fuse_daemonize() returns to the shell before the kernel's INIT handshake,
// so a daemon that fails there would leave the user with exit code 0 and
// an empty directory; here the parent waits for the child to say it is
// serving and then checks the mount itself.
#pragma once

#include <string>
#include <sys/types.h>

namespace clairfs::fuse {

struct Detached {
    bool is_parent = false;
    int ready_fd = -1; // parent: read end; child: write end
    pid_t child = -1;  // parent: the daemon's pid
};

// Forks. The child starts a new session in "/" with stdin on /dev/null and
// keeps stderr until notify_ready(), so start-up errors still reach the user.
std::string detach(Detached& out);

// Child, from the FUSE init callback: tells the parent and, unless
// `keep_terminal`, drops the terminal.
void notify_ready(int& ready_fd, bool keep_terminal = false);

// Parent: waits for the child, then checks that `mountpoint` answers.
// Returns "" or the reason the daemon did not come up.
std::string wait_ready(int ready_fd, const std::string& mountpoint);

} // namespace clairfs::fuse
