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

// Writes `text` to the control file in one write(2); 0 or the -errno of
// the open, the write or the close (a refused registration is -EINVAL).
int write_control_file(const std::string& abs_mount, const std::string& text);

// The whole of a control file; 0 or -errno.
int read_control_file(const std::string& path, std::string& text);

// Why the last registration was refused: status's "error", or a phrase
// saying it could not be read.
std::string refusal_reason(const std::string& abs_mount);

// A one-line failure of a write to the control file, for stderr; exit_failure.
int report_write_failure(const std::string& abs_mount, int err);

} // namespace clairfs::cli
