// SPDX-License-Identifier: MIT
// `clairfs status MOUNT [--json | --prometheus] [--cluster] [--watch [SECONDS]]`.
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "control_client.hpp"
#include "status_prometheus.hpp"
#include "status_summary.hpp"
#include "watch_terminal.hpp"
#include "watch_view.hpp"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <thread>

namespace clairfs::cli {
namespace {

struct StatusArgs {
    std::string mount;
    bool json = false;
    bool prometheus = false; // text exposition format
    bool cluster = false;    // one row per node of the peer group
    double watch = 0; // seconds between reports; 0: report once
};

constexpr double default_watch = 1, max_watch = 86400;

// "2", "0.5", ".5", "-1": an interval, right or wrong, rather than a mount.
bool numeric(const std::string& s) {
    size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
    return i < s.size() && (isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.');
}

std::string parse(const std::vector<std::string>& args, StatusArgs& out, bool& help) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            help = true;
        } else if (a == "--json") {
            out.json = true;
        } else if (a == "--prometheus") {
            out.prometheus = true;
        } else if (a == "--cluster") {
            out.cluster = true;
        } else if (a == "--watch" || a.starts_with("--watch=")) {
            // The interval may be left out, so the next argument is it only
            // if it reads as a number: `status --watch MOUNT` and
            // `status MOUNT --watch 2` both mean what they say.
            out.watch = default_watch;
            std::string v;
            if (a.size() > 7)
                v = a.substr(8);
            else if (i + 1 < args.size() && numeric(args[i + 1]))
                v = args[++i];
            else
                continue;
            // At most a day: a larger one would overflow the sleep.
            if (!config::parse_seconds(v, out.watch) || out.watch <= 0 || out.watch > max_watch)
                return "invalid value for --watch: '" + v +
                       "' (expected seconds, more than 0 and at most 86400)";
        } else if (a.starts_with("-")) {
            return "unknown option '" + a + "'";
        } else if (out.mount.empty()) {
            out.mount = a;
        } else {
            return "unexpected argument '" + a + "'";
        }
    }
    if (!help && out.mount.empty()) return "expected MOUNT";
    if (out.prometheus && (out.json || out.cluster))
        return "--prometheus is a format of its own: not with --json or --cluster";
    return "";
}

// `--cluster`: one row per node of the peer group, from the summaries the
// daemons send each other every second (peers.nodes).
// The table's two heading lines.
std::string cluster_heading() {
    std::string out;
    char line[512];
    snprintf(line, sizeof line, "%-5s %-16s %-8s %-12s %6s %9s %10s %8s %8s %7s %8s\n", "node",
             "host", "state", "mode", "match", "backing", "backing", "peer", "peer", "RAM",
             "stall");
    out += line;
    snprintf(line, sizeof line, "%-5s %-16s %-8s %-12s %6s %9s %10s %8s %8s %7s %8s\n", "", "",
             "", "", "rate", "files", "MB", "in", "out", "hit %", "s");
    out += line;
    return out;
}

// One node's row, from the summary it last sent.
std::string node_row(const nlohmann::json& n) {
    char line[512];
    const auto& s = n["summary"];
    std::string host = n.value("host", "");
    if (host.size() > 16) host = host.substr(0, 16);
    if (!s.is_object()) {
        snprintf(line, sizeof line, "%-5d %-16s %-8s (no report yet)\n", n.value("rank", -1),
                 host.c_str(), n.value("state", "").c_str());
        return line;
    }
    const uint64_t zero = 0;
    uint64_t hits = s.value("ram_hits", zero), misses = s.value("ram_misses", zero);
    double hit = hits + misses
                     ? 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses)
                     : 0.0;
    std::string match = s["match_rate"].is_number()
                            ? std::to_string(s["match_rate"].get<double>()).substr(0, 5)
                            : "-";
    snprintf(line, sizeof line, "%-5d %-16s %-8s %-12s %6s %9llu %10.1f %8llu %8llu %7.1f %8.1f\n",
             n.value("rank", -1), host.c_str(), n.value("state", "").c_str(),
             s.value("mode", "").c_str(), match.c_str(),
             static_cast<unsigned long long>(s.value("backing_files", zero)),
             static_cast<double>(s.value("backing_bytes", zero)) / 1e6,
             static_cast<unsigned long long>(s.value("peer_files_in", zero)),
             static_cast<unsigned long long>(s.value("peer_files_out", zero)), hit,
             s.value("stall_seconds", 0.0));
    return line;
}

std::string cluster_table(const nlohmann::json& st, bool json) {
    nlohmann::json nodes = st.contains("peers") && st["peers"].is_object()
                               ? st["peers"].value("nodes", nlohmann::json::array())
                               : nlohmann::json::array();
    if (json) return nodes.dump(2) + "\n";
    if (nodes.empty()) return "no peer group: the mount was made without --peers\n";
    std::string out = cluster_heading();
    for (const auto& n : nodes) out += node_row(n);
    return out;
}

void print_status_help() {
    printf("usage: clairfs status MOUNT [--json | --prometheus] [--cluster]\n"
           "                      [--watch [SECONDS]]\n\n"
           "Shows what a mount is doing: mode, the registered job's progress per rank,\n"
           "RAM use and hit rate, backing-store reads, stalls and prefetch lead.\n"
           "  --json             print MOUNT/.clairfs/status as it is (keys in\n"
           "                     clairfs-control(5))\n"
           "  --prometheus       the same figures in Prometheus' text format (for\n"
           "                     node_exporter's textfile collector), labelled\n"
           "                     mount=\"MOUNT\"\n"
           "  --cluster          one row per node of the mount's peer group (--peers),\n"
           "                     from the summaries the daemons send each other every\n"
           "                     second; with --json, the rows as JSON\n"
           "  --watch [SECONDS]  refresh every SECONDS (default 1) until q or ^C: on a\n"
           "                     terminal a full-screen view redrawn in place (tiers\n"
           "                     as bars, prefetch lead, match rate, shared-FS bytes\n"
           "                     read and saved, rates per second); piped, or with\n"
           "                     --json, --prometheus or --cluster, one report after\n"
           "                     another\n");
}

// One report; false (after saying why) if the status cannot be read.
bool report(const std::string& abs, bool json, bool cluster, bool prometheus) {
    std::string text;
    if (int rv = read_control_file(status_path(abs), text); rv < 0) {
        LOG_ERROR("cannot read %s: %s", status_path(abs).c_str(), sys::error_text(rv));
        return false;
    }
    if (json && !cluster) {
        fputs(text.c_str(), stdout);
    } else {
        auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            LOG_ERROR("%s is not a JSON object", status_path(abs).c_str());
            return false;
        }
        fputs(prometheus ? prometheus_text(j, abs).c_str()
              : cluster  ? cluster_table(j, json).c_str()
                         : status_summary(j).c_str(),
              stdout);
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
        print_status_help();
        return exit_ok;
    }
    std::string abs;
    if (int rv = locate_mount(a.mount, abs); rv != exit_ok) return rv;
    if (a.watch > 0 && !a.json && !a.prometheus && !a.cluster && watch_terminal_usable())
        return watch_view(abs, a.watch);
    for (bool first = true;; first = false) {
        if (!first) {
            std::this_thread::sleep_for(std::chrono::duration<double>(a.watch));
            if (!a.json && !a.prometheus) fputs("\n", stdout);
        }
        if (!report(abs, a.json, a.cluster, a.prometheus)) return exit_failure;
        if (a.watch <= 0) return exit_ok;
    }
}

} // namespace clairfs::cli
