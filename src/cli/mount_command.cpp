// SPDX-License-Identifier: MIT
// `clairfs mount BACKING MOUNTPOINT`: check, scan, index, then serve.
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/mount_args.hpp"
#include "clairfs/control/controller.hpp"
#include "clairfs/fuse/session.hpp"
#include "clairfs/index/load_index.hpp"
#include "clairfs/log.hpp"
#include "metrics_server.hpp"
#include "mount_checks.hpp"
#include "mount_engine.hpp"
#include "mount_table.hpp"
#include "peer_launch.hpp"

#include <algorithm>
#include <cstdio>
#include <malloc.h>
#include <nlohmann/json.hpp>

namespace clairfs::cli {
namespace {

int fail(const std::string& why) {
    LOG_ERROR("%s", why.c_str());
    return exit_failure;
}

void report_scan(const index::ScanReport& r, const index::Index& idx, const std::string& root) {
    const auto& t = idx.totals();
    LOG_INFO("indexed %s: %llu files, %llu directories, %llu symlinks, %.2f GB in %.2f s "
             "(index %.1f MB)",
             root.c_str(), static_cast<unsigned long long>(t.files),
             static_cast<unsigned long long>(t.dirs), static_cast<unsigned long long>(t.symlinks),
             static_cast<double>(t.bytes) / 1e9, r.seconds,
             static_cast<double>(idx.memory_bytes()) / 1e6);
    if (r.hidden_symlinks)
        LOG_WARN("hid %llu symlinks that lead outside %s (first: %s)",
                 static_cast<unsigned long long>(r.hidden_symlinks), root.c_str(),
                 r.first_hidden_symlink.c_str());
    if (r.hidden_special)
        LOG_WARN("hid %llu fifos, sockets or device nodes",
                 static_cast<unsigned long long>(r.hidden_special));
    if (r.unreadable_dirs)
        LOG_WARN("%llu directories could not be read and answer with their error (first: %s)",
                 static_cast<unsigned long long>(r.unreadable_dirs),
                 r.first_unreadable_dir.c_str());
    if (r.vanished)
        LOG_WARN("%llu entries vanished during the scan and are not shown",
                 static_cast<unsigned long long>(r.vanished));
}

std::string build_index(const Backing& b, const config::MountOptions& o, index::Index& out) {
    index::ScanReport report;
    if (auto why = index::load_index(b.fd, b.real, {o.scan_threads, o.progress}, out, report);
        !why.empty())
        return "cannot index backing directory '" + o.backing + "': " + why;
    report_scan(report, out, b.real);
    // The raw tree was several times the index's size and was spread over
    // the scan threads' malloc arenas; give it back before the daemon runs
    // for days.
    malloc_trim(0);
    return "";
}

// The most specific complaint first; all of them before the scan. A dead
// mount first of all: the backing directory may be under it.
std::string preflight(config::MountOptions& o, Backing& backing) {
    if (auto why = clear_dead_mount(o.mountpoint, o.backing); !why.empty()) return why;
    if (auto why = open_backing(o.backing, backing); !why.empty()) return why;
    if (auto why = check_mountpoint(o.mountpoint); !why.empty()) return why;
    if (auto why = check_fuse_device(); !why.empty()) return why;
    // The daemon works from "/", so every path it keeps must be absolute:
    // the unmount at exit, the log file, and the source shown in df.
    o.backing = backing.real;
    o.mountpoint = resolved_path(o.mountpoint);
    if (!o.log_file.empty()) o.log_file = absolute_path(o.log_file);
    return "";
}

// Bound before the scan, the mount and the fork: a taken port fails the
// command at once, with nothing mounted.
std::string bind_metrics(const config::MountOptions& o, MetricsServer& metrics) {
    if (o.metrics.port == 0) return "";
    return metrics.bind(o.metrics.address, o.metrics.port);
}

// --opens: the fanotify group is made here, where a refusal (not root)
// can still fail the command; auto settles for OPENs then, and `opens_why`
// says why for status.
std::string prepare_opens(config::MountOptions& o, fuse::OpenWatch& watch,
                          std::string& opens_why) {
    opens_why = o.fast_path.opens == config::Opens::fuse ? "--opens fuse" : "";
    if (o.fast_path.opens == config::Opens::fuse) return "";
    if (auto why = watch.prepare(); !why.empty()) {
        if (o.fast_path.opens == config::Opens::fanotify) return "--opens fanotify: " + why;
        LOG_INFO("opens are followed through OPEN round trips: %s", why.c_str());
        o.fast_path.opens = config::Opens::fuse;
        opens_why = why;
    } else {
        o.fast_path.opens = config::Opens::fanotify;
    }
    return "";
}

// --peers: from here on this is the daemon, forked off the process the
// MPI launcher started, which joined the group for it (peer_launch.cpp).
std::string join_peers(const config::MountOptions& o, const index::Index& idx, uint64_t mem,
                       PeerLaunch& launch) {
    if (o.peers.mode == config::Peers::none) return "";
    if (mem == 0) return "--peers needs the RAM tier (--mem above 0)";
    if (auto why = launch_peers(o, idx, mem, launch); !why.empty()) return why;
    LOG_INFO("peer group: rank %d of %d", launch.group.self, launch.group.size());
    return "";
}

// Job detection as asked, and the --register file, read before the mount
// so a bad file fails the command with nothing mounted; the engine's
// threads start after the fork and find the job waiting.
std::string build_control(const config::MountOptions& o, control::Controller& control) {
    if (o.detect.on) {
        control::DetectorOptions d;
        d.cpu_share = o.detect.cpu / 100;
        for (uint64_t s : o.detect.seeds)
            if (std::find(d.search.seeds.begin(), d.search.seeds.end(), s) == d.search.seeds.end())
                d.search.seeds.push_back(s);
        control.enable_detection(std::move(d));
    }
    if (o.register_file.empty()) return "";
    return control::register_at_mount(control, absolute_path(o.register_file));
}

// What the session starts and stops beside the engine, and what it takes
// over from the start-up.
void wire_filesystem(fuse::Filesystem& fs, MetricsServer& metrics, const PeerLaunch& launch,
                     fuse::OpenWatch& watch) {
    const config::MountOptions& o = fs.options;
    if (o.metrics.port != 0) {
        fs.on_start = [&metrics] { metrics.start(); };
        fs.on_stop = [&metrics] { metrics.stop(); };
    }
    if (o.peers.mode != config::Peers::none) {
        fs.ready_fd = launch.ready_fd;
        fs.predetached = true;
    }
    if (o.fast_path.opens == config::Opens::fanotify) fs.open_watch = &watch;
}

// The session's part of status: requests by kind, passthrough, the
// transport, and where opens are seen.
control::Controller::StatusPart session_status(const fuse::Filesystem& fs, const std::string& opens_why) {
    return [&fs, &opens_why](nlohmann::json& j) {
        nlohmann::json& r = j["requests"];
        r = nlohmann::json::object();
        for (size_t k = 0; k < fuse::request_kinds.size(); ++k)
            r[std::string(fuse::request_kinds[k])] = fs.counters.requests.of(k);
        fs.passthrough.status(j["passthrough"]);
        fs.transport.status(j["transport"]);
        fs.readahead.status(j["readahead"]);
        if (fs.open_watch) {
            fs.open_watch->status(j["opens"]);
        } else {
            bool kernel = fs.options.fast_path.kernel_opens;
            j["opens"] = {{"source", kernel ? "reads" : "fuse"},
                          {"why_not", kernel ? "--kernel-opens" : opens_why}};
        }
    };
}

// Until unmounted; then the status stops asking `fs`, which ends here.
int serve(fuse::Filesystem& fs, MetricsServer& metrics, control::Controller& control) {
    std::string why = fuse::serve(fs);
    metrics.stop(); // idempotent: a failed start-up never reached on_stop
    control.add_status_part(nullptr);
    if (!why.empty()) return fail(why);
    return exit_ok;
}

} // namespace

int mount_command(const std::vector<std::string>& args) {
    config::MountArgs parsed;
    if (auto why = config::parse_mount_args(args, parsed); !why.empty()) {
        fprintf(stderr, "clairfs: %s (see clairfs mount --help)\n", why.c_str());
        return exit_usage;
    }
    if (parsed.help) {
        config::print_mount_help("clairfs");
        return exit_ok;
    }
    config::MountOptions& o = parsed.options;
    log::set_level(o.log_level);
    Backing backing;
    if (auto why = preflight(o, backing); !why.empty()) return fail(why);
    MetricsServer metrics(o.mountpoint);
    if (auto why = bind_metrics(o, metrics); !why.empty()) return fail(why);
    fuse::OpenWatch watch;
    std::string opens_why;
    if (auto why = prepare_opens(o, watch, opens_why); !why.empty()) return fail(why);
    index::Index idx;
    if (auto why = build_index(backing, o, idx); !why.empty()) return fail(why);
    prefetch::EngineOptions eo = engine_options(o);
    PeerLaunch launch;
    if (auto why = join_peers(o, idx, eo.mem, launch); !why.empty()) return fail(why);
    set_up_heap(eo);
    prefetch::Engine engine(idx, backing.fd, eo);
    attach_tiers(o, backing.real, idx, launch, engine);
    control::Controller control(idx, engine);
    if (auto why = build_control(o, control); !why.empty()) return fail(why);
    metrics.serve_from(control);
    fuse::Filesystem fs{idx, backing.fd, o, {}};
    wire_filesystem(fs, metrics, launch, watch);
    fs.engine = &engine;
    fs.control = &control;
    control.add_status_part(session_status(fs, opens_why));
    return serve(fs, metrics, control);
}

} // namespace clairfs::cli
