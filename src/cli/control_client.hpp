// SPDX-License-Identifier: MIT
// The CLI's side of a mount's .clairfs/ directory: `clairfs register`,
// `unregister` and `status` read and write these files like any program.
#pragma once

#include <string>

namespace clairfs::cli {

// The mount point as mountinfo spells it in `abs`, or the one-line reason
// `mount` is not a clairfs mount.
std::string find_clairfs_mount(const std::string& mount, std::string& abs);

std::string control_path(const std::string& abs_mount);
std::string status_path(const std::string& abs_mount);

// find_clairfs_mount for a command: exit_ok, or exit_failure after the
// reason on stderr.
int locate_mount(const std::string& mount, std::string& abs);

// What register, unregister and stage do with the control file: writes
// `text` in one write(2) and reports a refusal or failure as one line on
// stderr (the daemon's reason for EINVAL). exit_ok or exit_failure.
int send_control(const std::string& abs_mount, const std::string& text);

// The whole of a control file; 0 or -errno.
int read_control_file(const std::string& path, std::string& text);

// Why the last registration was refused: status's "error", or a phrase
// saying it could not be read.
std::string refusal_reason(const std::string& abs_mount);

} // namespace clairfs::cli
