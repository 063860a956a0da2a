// SPDX-License-Identifier: MIT
// `--ranks auto`: the ranks of the training job that run on this node, read
// from the environment its launcher sets (torchrun, Slurm), so that one
// registration line serves every node of a job script.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace clairfs::cli {

struct LauncherRanks {
    std::vector<uint64_t> ranks;       // this node's ranks, ascending
    std::optional<uint64_t> world_size; // the job's, where the environment says
    std::string source;                 // which variables said so, for the user
};

// A variable's value, or nullopt when unset (getenv in the command, a map in
// tests).
using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// The ranks on this node, or "" replaced by a one-line reason. `world_size`
// is the registration's own world_size when it has one (it wins over
// WORLD_SIZE, and with Slurm gives the ranks per node).
std::string launcher_ranks(const EnvLookup& env, std::optional<uint64_t> world_size,
                           LauncherRanks& out);

EnvLookup process_environment();

} // namespace clairfs::cli
