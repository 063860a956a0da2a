// SPDX-License-Identifier: MIT
// `clairfs mount --peers mpi`: the process the MPI launcher started forks
// the daemon into a session of its own before it touches MPI, joins the
// group, hands it to the daemon over a pipe, and then stands in for the
// daemon towards the launcher (see peer_launch.cpp for why).
#pragma once

#include "clairfs/config/mount_options.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/peer/group.hpp"

#include <string>

namespace clairfs::cli {

struct PeerLaunch {
    peer::Group group;
    int listen_fd = -1; // this daemon's peer listener
    int ready_fd = -1;  // the daemon's end of the pipe notify_ready() writes
};

// Returns only in the daemon: "" and the group, or why it has none (before
// the fork, or when the launcher's process gave up). The process the
// launcher started never returns from here.
std::string launch_peers(const config::MountOptions& o, const index::Index& idx, uint64_t mem,
                         PeerLaunch& out);

} // namespace clairfs::cli
