// SPDX-License-Identifier: MIT
// `clairfs register MOUNT [--config FILE] [--KEY VALUE ...]`: the flags
// turned into the control file's JSON, typed as clairfs-control(5) types
// them (numbers as numbers, flags as booleans).
#pragma once

#include "launcher_ranks.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clairfs::cli {

struct RegisterArgs {
    std::string mount;
    bool help = false;
    nlohmann::ordered_json body = nlohmann::ordered_json::object();
    std::string note; // what --ranks auto found, for the user
};

// "" or the one-line usage error. Values are checked for their type here
// and for their range by the daemon, which has the dataset. `ranks auto` is
// resolved here, from `env`: the launcher's environment is the command's,
// not the daemon's.
std::string parse_register_args(const std::vector<std::string>& args, RegisterArgs& out,
                                const EnvLookup& env = process_environment());

// An absolute path below the mount point made relative to it, as the
// control file wants `root` and `manifest`; other paths unchanged.
std::string mount_relative(const std::string& path, const std::string& abs_mount);

void print_register_help();

} // namespace clairfs::cli
