// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <vector>

namespace clairfs::cli {

// Exit codes shared by every subcommand (documented in clairfs(1)).
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1; // the request was valid but could not be done
inline constexpr int exit_usage = 2;   // the request itself was wrong

int mount_command(const std::vector<std::string>& args);
int umount_command(const std::vector<std::string>& args);
int order_command(const std::vector<std::string>& args);
int register_command(const std::vector<std::string>& args);
int unregister_command(const std::vector<std::string>& args);
int status_command(const std::vector<std::string>& args);
int stage_command(const std::vector<std::string>& args);
int wait_command(const std::vector<std::string>& args);
int simulate_command(const std::vector<std::string>& args);
int ranges_command(const std::vector<std::string>& args);

} // namespace clairfs::cli
