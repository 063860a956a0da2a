// SPDX-License-Identifier: MIT
// `clairfs stage MOUNT [--wait]`: start copying the whole dataset into the
// mount's tiers in the background, and optionally follow it to the end.
#include "clairfs/cli/commands.hpp"
#include "clairfs/log.hpp"
#include "control_client.hpp"
#include "status_summary.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <unistd.h>

namespace clairfs::cli {
namespace {

int stage_usage_error(const std::string& why) {
    fprintf(stderr, "clairfs: %s (see clairfs stage --help)\n", why.c_str());
    return exit_usage;
}

// The stage object of the mount's status, or why it could not be read.
std::string read_stage(const std::string& abs, nlohmann::json& out) {
    std::string text;
    if (int rv = read_control_file(status_path(abs), text); rv < 0)
        return "cannot read " + status_path(abs) + ": " + strerror(-rv);
    try {
        out = nlohmann::json::parse(text).at("stage");
    } catch (const nlohmann::json::exception&) {
        return status_path(abs) + " has no stage progress (is the daemon older than this command?)";
    }
    return "";
}

void print_stage_help() {
    printf("usage: clairfs stage MOUNT [--wait]\n\n"
           "Copies every file of the mounted dataset into the mount's tiers (the SSD tier\n"
           "of --cache-dir, else RAM until it is full) in the background, in the registered\n"
           "job's order of first use when there is one. The job may read meanwhile. Progress "
           "is in\n"
           "`clairfs status`; --wait follows it here and returns when the pass ends:\n"
           "exit 0 when everything is staged, 1 when the tier ran out of room or some\n"
           "files could not be copied.\n");
}

// The mount and --wait; an exit code when the command ends here (--help,
// or a usage error).
std::optional<int> parse_stage_args(const std::vector<std::string>& args, std::string& mount,
                              bool& wait) {
    for (const auto& a : args) {
        if (a == "--help" || a == "-h") {
            print_stage_help();
            return exit_ok;
        }
        if (a == "--wait") {
            wait = true;
            continue;
        }
        if (a.starts_with("-")) return stage_usage_error("unknown option '" + a + "'");
        if (!mount.empty()) return stage_usage_error("unexpected argument '" + a + "'");
        mount = a;
    }
    if (mount.empty()) return stage_usage_error("expected MOUNT");
    return std::nullopt;
}

// --wait: the pass's progress line until it ends, rewritten in place on a
// terminal, every 5 s otherwise.
int follow_stage(const std::string& abs) {
    using namespace std::chrono_literals;
    bool tty = isatty(STDERR_FILENO);
    std::this_thread::sleep_for(100ms); // the pass reports "running" once it has its order
    for (;;) {
        nlohmann::json st;
        if (auto why = read_stage(abs, st); !why.empty()) {
            LOG_ERROR("%s", why.c_str());
            return exit_failure;
        }
        std::string state = st.value("state", "");
        std::string l = stage_line(st);
        if (state != "running") {
            fprintf(stderr, tty ? "\r%s\033[K\n" : "%s\n", l.c_str());
            return state == "done" ? exit_ok : exit_failure;
        }
        if (tty) fprintf(stderr, "\r%s\033[K", l.c_str());
        std::this_thread::sleep_for(tty ? 500ms : 5s);
        if (!tty) fprintf(stderr, "%s\n", l.c_str());
    }
}

} // namespace

int stage_command(const std::vector<std::string>& args) {
    std::string mount;
    bool wait = false;
    if (std::optional<int> rc = parse_stage_args(args, mount, wait)) return *rc;
    std::string abs;
    if (int rv = locate_mount(mount, abs); rv != exit_ok) return rv;
    if (int rv = send_control(abs, "{\"stage\": true}\n"); rv != exit_ok || !wait) return rv;
    return follow_stage(abs);
}

} // namespace clairfs::cli
