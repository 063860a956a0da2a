// SPDX-License-Identifier: MIT
// Finding the daemon that serves a clairfs mount, so that `clairfs umount`
// can return only once it has let go of everything (the cache file's lock
// above all: a job restarted at once must find its warm cache free).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace clairfs::cli {

// The clairfs daemons that serve the mount of `backing` (its real path) at
// `mountpoint`: processes named *clairfs* that hold /dev/fuse and `backing`
// open. Several mounts of one backing directory are told apart by the
// mount point on their command line; empty if none (or none readable).
std::vector<pid_t> mount_daemons(const std::string& backing, const std::string& mountpoint);

// Waits until every pid has exited (a zombie counts as exited); false if
// one is still running after `seconds`.
bool wait_for_exit(const std::vector<pid_t>& pids, double seconds);

} // namespace clairfs::cli
