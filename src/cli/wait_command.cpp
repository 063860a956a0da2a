// SPDX-License-Identifier: MIT
// `clairfs wait MOUNT [--timeout S]`: returns once the mount answers and,
// with --peers, its group has formed (every peer connected or known dead).
// For scripts that start a daemon with -f in the background: a mount point
// that is still an empty directory, or a daemon still joining its peers,
// would otherwise let the job start too early.
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/value_parsers.hpp"
#include "control_client.hpp"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace clairfs::cli {
namespace {

int wait_usage_error(const std::string& why) {
    fprintf(stderr, "clairfs: %s (see clairfs wait --help)\n", why.c_str());
    return exit_usage;
}

// "" when the mount answers and its group (if any) has formed; else what is
// still missing, for the message at the timeout.
std::string not_ready(const std::string& mount, nlohmann::json& peers) {
    std::string abs;
    if (auto why = find_clairfs_mount(mount, abs); !why.empty()) return why;
    std::string text;
    if (int rv = read_control_file(status_path(abs), text); rv < 0)
        return "its status cannot be read yet";
    try {
        peers = nlohmann::json::parse(text).value("peers", nlohmann::json());
    } catch (const nlohmann::json::exception&) {
        return "its status is not JSON yet";
    }
    if (peers.is_object() && !peers.value("formed", false))
        return "its peers are still joining (" + std::to_string(peers.value("alive", 0)) +
               " of " + std::to_string(peers.value("count", 0)) + " up)";
    return "";
}

void print_wait_help() {
    printf("usage: clairfs wait MOUNT [--timeout SECONDS]\n\n"
           "Waits until MOUNT is a clairfs mount that answers and, for a mount with\n"
           "--peers, until its peer group has formed (every other daemon connected or\n"
           "known dead). Exit 0 then; 1 after --timeout (default 60 s, 0 for ever) with\n"
           "what is still missing.\n");
}

// The mount and --timeout; an exit code when the command ends here
// (--help, or a usage error).
std::optional<int> parse_wait_args(const std::vector<std::string>& args, std::string& mount,
                              double& timeout) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            print_wait_help();
            return exit_ok;
        }
        if (a == "--timeout") {
            if (i + 1 >= args.size()) return wait_usage_error("--timeout needs a number of seconds");
            if (!config::parse_seconds(args[++i], timeout))
                return wait_usage_error("--timeout expects a non-negative number of seconds");
        } else if (a.starts_with("-")) {
            return wait_usage_error("unknown option '" + a + "'");
        } else if (mount.empty()) {
            mount = a;
        } else {
            return wait_usage_error("one mount point only");
        }
    }
    if (mount.empty()) return wait_usage_error("which mount? clairfs wait MOUNT");
    return std::nullopt;
}

} // namespace

int wait_command(const std::vector<std::string>& args) {
    std::string mount;
    double timeout = 60;
    if (std::optional<int> rc = parse_wait_args(args, mount, timeout)) return *rc;
    using Clock = std::chrono::steady_clock;
    auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
    for (;;) {
        nlohmann::json peers;
        std::string why = not_ready(mount, peers);
        if (why.empty()) {
            if (peers.is_object() && !peers["dead"].empty())
                fprintf(stderr, "clairfs: %s is up; peers %s are down\n", mount.c_str(),
                        peers["dead"].dump().c_str());
            return exit_ok;
        }
        if (timeout > 0 && Clock::now() >= deadline) {
            fprintf(stderr, "clairfs: %s is not ready after %g s: %s\n", mount.c_str(), timeout,
                    why.c_str());
            return exit_failure;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

} // namespace clairfs::cli
