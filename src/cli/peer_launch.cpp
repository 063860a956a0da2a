// SPDX-License-Identifier: MIT
// Why the daemon is not the process MPI started. MPICH 4.0.2's Hydra
// (Debian 12), measured with -disable-auto-cleanup on one host:
// - when one launched process dies, the proxy sends the others SIGUSR1,
//   whose default action kills them;
// - in some of those runs, and when a launched process later exits
//   normally, the proxy also kills the other launched processes' process
//   groups with SIGKILL, which nothing can catch;
// - MPI_Finalize is a barrier of the process manager: a member that exits
//   while it is in flight makes the proxy fail and take the rest down.
// So the launched process forks the daemon before MPI_Init, into a new
// session that none of those signals reach, and makes its few MPI calls
// itself. It never calls MPI_Finalize. One node's death then never takes
// another node's mount with it. With -f it waits for the daemon and passes
// on SIGINT, SIGTERM and SIGHUP, so ending the launch unmounts every node.
#include "peer_launch.hpp"

#include "clairfs/fuse/daemon.hpp"
#include "clairfs/log.hpp"
#include "clairfs/peer/fingerprint.hpp"
#include "clairfs/peer/mpi_join.hpp"
#include "clairfs/peer/transport.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace clairfs::cli {
namespace {

// How long the daemons of one launch may take to reach the join: each
// scans its dataset first, and a slow shared file system makes that minutes.
constexpr std::chrono::minutes join_bound{30};

pid_t daemon_pid = -1;

void forward(int sig) {
    if (daemon_pid > 0) ::kill(daemon_pid, sig);
}

std::string host_name() {
    char h[256] = {};
    if (::gethostname(h, sizeof h - 1) != 0) return "localhost";
    return h;
}

// Signals for the daemon go on to it; Hydra's "a member died" notice is
// nothing this process acts on.
void forward_signals(pid_t child) {
    daemon_pid = child;
    std::signal(SIGUSR1, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

// The group, as one line of JSON, down the pipe the daemon reads; exits on
// a failure, which leaves the daemon to report a group that never came.
void hand_group(int group_w, const peer::Group& g) {
    std::string line = peer::group_to_json(g) + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left) {
        ssize_t n = ::write(group_w, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            LOG_ERROR("cannot hand the peer group to the daemon: %s",
                      sys::error_text(-errno));
            _exit(1);
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    ::close(group_w);
}

// The launched process, from the fork on.
[[noreturn]] void stand_in(pid_t child, int group_w, int ready_r, const peer::Member& me,
                           const config::MountOptions& o) {
    forward_signals(child);
    peer::Group g;
    std::string why = peer::mpi_join(me, join_bound, g);
    if (!why.empty()) {
        LOG_ERROR("cannot form the peer group: %s", why.c_str());
        ::kill(child, SIGTERM);
        _exit(1);
    }
    hand_group(group_w, g);
    LOG_INFO("joined the peer group as rank %d of %d", g.self, g.size());

    why = fuse::wait_ready(ready_r, o.mountpoint);
    if (!why.empty()) {
        LOG_ERROR("%s", why.c_str());
        _exit(1);
    }
    // Without -f the launch ends here, as a plain mount returns once it
    // serves. _exit: no MPI_Finalize, no atexit handlers of the MPI library.
    if (!o.foreground) _exit(0);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

} // namespace

std::string launch_peers(const config::MountOptions& o, const index::Index& idx, uint64_t mem,
                         PeerLaunch& out) {
    uint16_t port = static_cast<uint16_t>(o.peers.port);
    if (auto why = peer::open_listener(out.listen_fd, port); !why.empty())
        return "peer listener: " + why;
    peer::Member me;
    me.host = o.peers.address.empty() ? host_name() : o.peers.address;
    me.port = port;
    me.fingerprint = peer::index_fingerprint(idx);
    me.mem = mem;

    int gp[2];
    if (::pipe2(gp, O_CLOEXEC) < 0) return std::string("pipe: ") + sys::error_text(-errno);
    fuse::Detached d;
    if (auto why = fuse::detach(d); !why.empty()) return why;
    if (d.is_parent) {
        ::close(gp[0]);
        ::close(out.listen_fd); // the daemon's now
        stand_in(d.child, gp[1], d.ready_fd, me, o);
    }
    ::close(gp[1]);
    std::string line;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(gp[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        line.append(buf, static_cast<size_t>(n));
    }
    ::close(gp[0]);
    if (line.empty())
        return "the launcher's process ended before the peer group formed (see its message)";
    if (auto why = peer::group_from_json(line, out.group); !why.empty())
        return "bad peer group from the launcher's process: " + why;
    out.ready_fd = d.ready_fd;
    return "";
}

} // namespace clairfs::cli
