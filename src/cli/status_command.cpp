// SPDX-License-Identifier: MIT
// `clairfs status MOUNT [--json] [--watch SECONDS]`.
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/option_registry.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_client.hpp"
#include "status_summary.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

namespace clairfs::cli {
namespace {

struct StatusArgs {
    std::string mount;
    bool json = false;
    double watch = 0; // seconds between reports; 0: report once
};

std::string parse(const std::vector<std::string>& args, StatusArgs& out, bool& help) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            help = true;
        } else if (a == "--json") {
            out.json = true;
        } else if (a == "--watch" || a.starts_with("--watch=")) {
            std::string v = a.size() > 7 ? a.substr(8) : i + 1 < args.size() ? args[++i] : "";
            if (!config::parse_seconds(v, out.watch) || out.watch <= 0)
                return "invalid value for --watch: '" + v + "' (expected seconds > 0)";
        } else if (a.starts_with("-")) {
            return "unknown option '" + a + "'";
        } else if (out.mount.empty()) {
            out.mount = a;
        } else {
            return "unexpected argument '" + a + "'";
        }
    }
    if (!help && out.mount.empty()) return "expected MOUNT";
    return "";
}

// One report; false (after saying why) if the status cannot be read.
bool report(const std::string& abs, bool json) {
    std::string text;
    if (int rv = read_control_file(status_path(abs), text); rv < 0) {
        LOG_ERROR("cannot read %s: %s", status_path(abs).c_str(), sys::error_text(rv));
        return false;
    }
    if (json) {
        fputs(text.c_str(), stdout);
    } else {
        auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            LOG_ERROR("%s is not a JSON object", status_path(abs).c_str());
            return false;
        }
        fputs(status_summary(j).c_str(), stdout);
    }
    fflush(stdout);
    return true;
}

} // namespace

int status_command(const std::vector<std::string>& args) {
    StatusArgs a;
    bool help = false;
    if (auto why = parse(args, a, help); !why.empty()) {
        fprintf(stderr, "clairfs: %s (see clairfs status --help)\n", why.c_str());
        return exit_usage;
    }
    if (help) {
        printf("usage: clairfs status MOUNT [--json] [--watch SECONDS]\n\n"
               "Shows what a mount is doing: mode, the registered job's progress per rank,\n"
               "RAM use and hit rate, backing-store reads, stalls and prefetch lead.\n"
               "  --json             print MOUNT/.clairfs/status as it is (keys in\n"
               "                     clairfs-control(5))\n"
               "  --watch SECONDS    report again every SECONDS until interrupted\n");
        return exit_ok;
    }
    std::string abs;
    if (int rv = locate_mount(a.mount, abs); rv != exit_ok) return rv;
    for (bool first = true;; first = false) {
        if (!first) {
            std::this_thread::sleep_for(std::chrono::duration<double>(a.watch));
            if (!a.json) fputs("\n", stdout);
        }
        if (!report(abs, a.json)) return exit_failure;
        if (a.watch <= 0) return exit_ok;
    }
}

} // namespace clairfs::cli
