// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace clairfs::cli {

// `clairfs status MOUNT --watch` on a terminal: the view redrawn in place
// every `interval` seconds until 'q' or a signal. exit_ok after 'q';
// exit_failure, after one line on stderr, once the status cannot be read.
int watch_view(const std::string& abs_mount, double interval);

} // namespace clairfs::cli
