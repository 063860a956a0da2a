// SPDX-License-Identifier: MIT
// `clairfs mount BACKING MOUNTPOINT`: check, scan, index, then serve.
#include "clairfs/cache/blob_arena.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/memory_budget.hpp"
#include "clairfs/config/mount_args.hpp"
#include "clairfs/control/controller.hpp"
#include "clairfs/fuse/session.hpp"
#include "clairfs/index/load_index.hpp"
#include "clairfs/log.hpp"
#include "clairfs/prefetch/engine.hpp"
#include "clairfs/peer/peers.hpp"
#include "metrics_server.hpp"
#include "mount_checks.hpp"
#include "mount_table.hpp"
#include "peer_launch.hpp"

#include <algorithm>
#include <cstdio>
#include <malloc.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/statvfs.h>

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

// --io-timeout for the engine and the SSD tier. Beyond a day a bound means
// nothing, and the product must fit int64.
std::chrono::milliseconds io_timeout_of(const config::MountOptions& o) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::min(o.io_timeout, 86400.0) * 1000));
}

prefetch::EngineOptions engine_options(const config::MountOptions& o) {
    prefetch::EngineOptions e;
    e.mem = o.mem == config::auto_mem ? config::usable_memory() / 4 : o.mem;
    e.fetch_threads = o.fetch_threads;
    e.chunk_size = static_cast<uint32_t>(o.chunk_size);
    e.io_timeout = io_timeout_of(o);
    e.fuse_threads = o.threads;
    e.stage = o.stage;
    // --kernel-opens drops files' pages after use, to see every open as a
    // READ; peers are served from the RAM tier, which must then hold the
    // bytes itself.
    e.watch_opens = o.opens == config::Opens::fanotify;
    e.handover = o.handover && !o.kernel_opens && !e.watch_opens && o.peers == config::Peers::none;
    // With opens told after the fact, the push ahead is the only push.
    e.push_ahead = o.push_ahead || e.watch_opens;
    // --kernel-opens makes no OPEN to push at; --push-ahead pushes the same
    // files earlier; a file handed over has no copy in the RAM tier.
    e.open_push = o.open_push && !o.kernel_opens && !e.push_ahead && !e.handover;
    // --kernel-opens sees no RELEASE to drop at and drops pages itself; a
    // file handed over has only the kernel's copy; --push-ahead pushes a
    // file before its open, which a drop at the last close would undo.
    // Under --opens fanotify a drop comes at the close event, after which
    // the file is pushed again when next due.
    e.one_copy = o.kernel_opens || (o.push_ahead && !e.watch_opens) || e.handover
                     ? config::When::never
                     : o.one_copy;
    e.drop_behind = o.drop_behind;
    return e;
}

// Splits --ssd (auto: the dataset's bytes) between whole files and chunks
// in proportion to the dataset's bytes in each, as the RAM budget is.
struct SsdShare {
    uint64_t whole = 0; // extents of the files held whole
    uint64_t chunks = 0; // extents of the chunks
};

SsdShare ssd_need(const index::Index& idx, const prefetch::ChunkStore* chunks) {
    SsdShare need;
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        if (!S_ISREG(idx.node(id).mode)) continue;
        uint64_t extent = (idx.node(id).size + 4095) / 4096 * 4096;
        (chunks && chunks->covers(id) ? need.chunks : need.whole) += extent;
    }
    return need;
}

// One SSD tier in --cache-dir (whole files or chunks, each its own cache
// file), sized by its share of --ssd (auto: its share of the dataset, or
// of 90% of the directory's free space if less). Problems with the
// directory give a disabled tier that says why in status, not a failed
// mount.
std::unique_ptr<cache::SsdTier> open_ssd(const config::MountOptions& o, std::string dataset,
                                         cache::DescribeFile describe, size_t nodes,
                                         uint64_t need, uint64_t total_need) {
    cache::SsdOptions s;
    s.dir = absolute_path(o.cache_dir);
    s.dataset = std::move(dataset);
    s.describe = std::move(describe);
    s.nodes = nodes;
    double share = total_need ? static_cast<double>(need) / static_cast<double>(total_need) : 1;
    s.io_timeout = io_timeout_of(o);
    if (o.ssd == config::auto_ssd) {
        s.capacity = std::max<uint64_t>(need, 4096);
        struct statvfs v;
        if (statvfs(s.dir.c_str(), &v) == 0) {
            // A cache file from an earlier mount is room this one may reuse,
            // not space taken: otherwise every remount would shrink it.
            struct stat old {};
            std::string cache_file = s.dir + "/" + cache::cache_file_stem(s.dataset) + ".cache";
            uint64_t reusable = stat(cache_file.c_str(), &old) == 0
                                    ? static_cast<uint64_t>(old.st_blocks) * 512
                                    : 0;
            auto room = static_cast<uint64_t>(
                (static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) * share +
                 static_cast<double>(reusable)) *
                0.9);
            s.capacity = std::min(s.capacity, std::max<uint64_t>(room, 4096));
        }
    } else {
        s.capacity = static_cast<uint64_t>(static_cast<double>(o.ssd) * share) / 4096 * 4096;
    }
    return cache::SsdTier::open(s);
}

// The chunks' journal names each by its file's path and offset
// (prefetch/chunk_map.hpp), so a remount with another --chunk-size finds
// only the ranges both sizes share (a file's short last chunk), and one
// with another --mem finds those of the files chunked in both.
cache::DescribeFile describe_chunks(const index::Index& idx, const prefetch::ChunkMap& map) {
    return [&idx, &map](index::NodeId id, cache::FileIdentity& out) {
        if (id >= map.chunks()) return false;
        prefetch::ChunkRange r = map.range(id);
        const index::Node& n = idx.node(r.node);
        idx.relative_path(r.node, out.path);
        out.path = prefetch::chunk_journal_name(out.path, r);
        out.size = r.length;
        out.mtime_ns = n.mtime_sec * 1'000'000'000 + n.mtime_nsec;
        return true;
    };
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
    // The most specific complaint first; all of them before the scan. A dead
    // mount first of all: the backing directory may be under it.
    if (auto why = clear_dead_mount(o.mountpoint, o.backing); !why.empty()) return fail(why);
    if (auto why = open_backing(o.backing, backing); !why.empty()) return fail(why);
    if (auto why = check_mountpoint(o.mountpoint); !why.empty()) return fail(why);
    if (auto why = check_fuse_device(); !why.empty()) return fail(why);
    // The daemon works from "/", so every path it keeps must be absolute:
    // the unmount at exit, the log file, and the source shown in df.
    o.backing = backing.real;
    o.mountpoint = resolved_path(o.mountpoint);
    if (!o.log_file.empty()) o.log_file = absolute_path(o.log_file);

    // Bound before the scan, the mount and the fork: a taken port fails the
    // command at once, with nothing mounted.
    MetricsServer metrics(o.mountpoint);
    if (o.metrics_port != 0) {
        if (auto why = metrics.bind(o.metrics_address, o.metrics_port); !why.empty())
            return fail(why);
    }

    // --opens: the fanotify group is made here, where a refusal (not root)
    // can still fail the command; auto settles for OPENs then.
    fuse::OpenWatch watch;
    std::string opens_why = o.opens == config::Opens::fuse ? "--opens fuse" : "";
    if (o.opens != config::Opens::fuse) {
        if (auto why = watch.prepare(); !why.empty()) {
            if (o.opens == config::Opens::fanotify) return fail("--opens fanotify: " + why);
            LOG_INFO("opens are followed through OPEN round trips: %s", why.c_str());
            o.opens = config::Opens::fuse;
            opens_why = why;
        } else {
            o.opens = config::Opens::fanotify;
        }
    }

    index::Index idx;
    if (auto why = build_index(backing, o, idx); !why.empty()) return fail(why);

    prefetch::EngineOptions eo = engine_options(o);
    // --peers: from here on this is the daemon, forked off the process the
    // MPI launcher started, which joined the group for it (peer_launch.cpp).
    PeerLaunch launch;
    if (o.peers != config::Peers::none) {
        if (eo.mem == 0) return fail("--peers needs the RAM tier (--mem above 0)");
        if (auto why = launch_peers(o, idx, eo.mem, launch); !why.empty()) return fail(why);
        LOG_INFO("peer group: rank %d of %d", launch.group.self, launch.group.size());
    }

    // glibc raises its mmap threshold to the size of each large block freed
    // (read-through ranges, FUSE buffers, blobs past the arena), after which
    // such blocks come from the per-thread heaps and stay resident once
    // freed: under bench/soak.py's 10M reads with registrations rewritten,
    // the daemon grew to 221 MiB on a 32 MiB budget while its live heap
    // never passed 23 MB. Fixed thresholds give them back to the system.
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    if (eo.mem > 0) {
        // Headroom for buffers in flight and for evicted ones an open file
        // still holds; past it buffers come from the heap (counted in status).
        uint64_t headroom = std::max<uint64_t>(eo.mem / 8, 16 << 20);
        if (auto why = cache::BlobArena::install(eo.mem + headroom); !why.empty())
            LOG_WARN("RAM tier buffers come from the heap: %s", why.c_str());
        else if (eo.handover)
            cache::BlobArena::installed()->set_give_back(true);
    }
    prefetch::Engine engine(idx, backing.fd, eo);
    if (!o.cache_dir.empty() && o.ssd != 0) {
        prefetch::ChunkStore* chunks = engine.chunks();
        SsdShare need = ssd_need(idx, chunks);
        uint64_t total = need.whole + need.chunks;
        if (need.whole > 0 || !chunks)
            engine.attach_ssd(open_ssd(o, backing.real, cache::describe_index(idx), idx.size(),
                                       need.whole, total));
        if (chunks)
            engine.attach_chunk_ssd(open_ssd(o, backing.real + "#chunks",
                                             describe_chunks(idx, chunks->map()),
                                             chunks->map().chunks(), need.chunks, total));
    }
    if (o.peers != config::Peers::none) {
        peer::PeerOptions po;
        po.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.peer_timeout * 1000));
        po.wait_bound = io_timeout_of(o);
        engine.attach_peers(
            std::make_unique<peer::Peers>(std::move(launch.group), launch.listen_fd, po));
    }
    control::Controller control(idx, engine);
    if (o.detect) {
        control::DetectorOptions d;
        d.cpu_share = o.detect_cpu / 100;
        for (uint64_t s : o.detect_seeds)
            if (std::find(d.search.seeds.begin(), d.search.seeds.end(), s) == d.search.seeds.end())
                d.search.seeds.push_back(s);
        control.enable_detection(std::move(d));
    }
    // Before the mount, so a bad file fails the command with nothing mounted;
    // the engine's threads start after the fork and find the job waiting.
    if (!o.register_file.empty()) {
        if (auto why = control::register_at_mount(control, absolute_path(o.register_file));
            !why.empty())
            return fail(why);
    }
    metrics.serve_from(control);
    fuse::Filesystem fs{idx, backing.fd, o, {}};
    if (o.metrics_port != 0) {
        fs.on_start = [&metrics] { metrics.start(); };
        fs.on_stop = [&metrics] { metrics.stop(); };
    }
    if (o.peers != config::Peers::none) {
        fs.ready_fd = launch.ready_fd;
        fs.predetached = true;
    }
    fs.engine = &engine;
    fs.control = &control;
    if (o.opens == config::Opens::fanotify) fs.open_watch = &watch;
    control.add_status_part([&fs, &opens_why](nlohmann::json& j) {
        nlohmann::json& r = j["requests"];
        r = nlohmann::json::object();
        for (size_t k = 0; k < fuse::request_kinds.size(); ++k)
            r[std::string(fuse::request_kinds[k])] = fs.counters.requests.of(k);
        fs.passthrough.status(j["passthrough"]);
        fs.transport.status(j["transport"]);
        if (fs.open_watch)
            fs.open_watch->status(j["opens"]);
        else
            j["opens"] = {{"source", fs.options.kernel_opens ? "reads" : "fuse"},
                          {"why_not", fs.options.kernel_opens ? "--kernel-opens" : opens_why}};
    });
    std::string why = fuse::serve(fs);
    metrics.stop(); // idempotent: a failed start-up never reached on_stop
    control.add_status_part(nullptr); // fs ends here
    if (!why.empty()) return fail(why);
    return exit_ok;
}

} // namespace clairfs::cli
