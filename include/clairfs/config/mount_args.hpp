// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/config/mount_options.hpp"

#include <string>
#include <vector>

namespace clairfs::config {

struct MountArgs {
    MountOptions options;
    bool help = false;
};

// Parses `clairfs mount` arguments (after the subcommand). Precedence, low
// to high: built-in defaults, --config FILE, then the command line in order.
// Returns "" or a one-line usage error.
std::string parse_mount_args(const std::vector<std::string>& args, MountArgs& out);

void print_mount_help(const char* prog);

} // namespace clairfs::config
